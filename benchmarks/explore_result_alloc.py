"""What a small device result's allocation costs on the host (GPU machine; not part of the
package's API): ``cupy.empty``, ``cupy.ndarray(shape, dtype)``, warplab's ``scalar.empty``
(the ``DeviceArray`` subclass every small result is), and the pool's ``cupy.cuda.alloc`` alone,
for the 64-float32 result of ``mean(x, axis=1)`` on 64 x 64. Medians of 20 rounds of 2,000
back-to-back allocations (freed as they go: the pool's cached block), microseconds each.
Usage: PYTHONPATH=src python3 benchmarks/explore_result_alloc.py
"""

import cupy
import numpy as np
from host_timing import per_call

from warplab.core import scalar

F32 = np.dtype(np.float32)
SHAPE = (64,)
base, sub = cupy.ndarray, scalar.array_type()
CASES = {
    "cupy.empty": lambda: cupy.empty(SHAPE, F32),
    "cupy.ndarray(shape, dtype)": lambda: base(SHAPE, F32),
    "scalar.empty (DeviceArray)": lambda: scalar.empty(SHAPE, F32),
    "DeviceArray(shape, dtype)": lambda: sub(SHAPE, F32),
    "cupy.cuda.alloc(256)": lambda: cupy.cuda.alloc(256),
    "DeviceArray on alloc(256)": lambda: sub(SHAPE, F32, cupy.cuda.alloc(256)),
}
N, ROUNDS = 2000, 20
for name, fn in CASES.items():
    print(f"{name:30s} {per_call(fn, calls=N, rounds=ROUNDS):6.2f} us")
