"""Why warplab's float32 sum accumulates in float64: a running float32 sum stalls at 2^24."""
import numpy as np

import warplab

x = np.ones((1 << 24) + 1000, dtype=np.float32)
naive = np.cumsum(x, dtype=np.float32)[-1]          # one float32 accumulator, element by element
print("float32 running sum:", naive)                # 16777216.0: adding 1.0 no longer changes it
print("warplab.sum:        ", warplab.sum(x))        # 16778216.0, the exact sum
print("result dtype:", warplab.sum(x).dtype, "| int32 sums give", warplab.sum(np.int32([1, 2])).dtype)
assert naive == 1 << 24 and warplab.sum(x) == x.size
assert warplab.mean(np.arange(10, dtype=np.int32)) == 4.5
