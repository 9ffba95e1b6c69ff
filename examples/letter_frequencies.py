"""Letter frequencies of a text, the histogram report's 27-bin mapping.

Runs on the GPU when one is usable, else on the NumPy backend; the result is the same.
"""
import warplab

text = b"The quick brown fox jumps over the lazy dog. " * 1000
counts = warplab.byte_histogram(text, bins="letters")  # bytes in, NumPy out
print("backend:", warplab.backend())
print("other characters:", counts[0])
for i in range(1, 27):
    print(f"{chr(64 + i)}/{chr(96 + i)}: {counts[i]}")
assert counts.sum() == len(text)
assert counts[ord("o") - 96] == 4 * 1000
