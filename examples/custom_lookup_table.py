"""A user lookup table: classify bytes into 4 bins (control, digit, letter, other)."""
import numpy as np

import warplab

lut = np.full(256, 3, dtype=np.int64)          # other
lut[:32] = 0                                    # control characters
lut[ord("0"):ord("9") + 1] = 1                  # digits
for lo, hi in (("A", "Z"), ("a", "z")):
    lut[ord(lo):ord(hi) + 1] = 2                # letters

data = b"Order 66 shipped on 2026-11-22.\n"
counts = warplab.byte_histogram(data, bins=lut)
print(dict(zip(["control", "digit", "letter", "other"], counts.tolist())))
assert counts.tolist() == [1, 10, 14, 7]
assert (warplab.bincount(np.frombuffer(data, np.uint8), minlength=256) ==
        warplab.byte_histogram(data)).all()
