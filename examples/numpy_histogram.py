"""NumPy's histogram and weighted bincount: the same counts and edges as NumPy, bit for bit.

Runs on the GPU when one is usable (device arrays in -> CuPy out), else on the NumPy backend.
"""
import numpy as np

import warplab

rng = np.random.default_rng(0)
x = rng.standard_normal(1_000_000).astype(np.float32)

hist, edges = warplab.histogram(x, bins=50, range=(-4, 4))
want, want_edges = np.histogram(x, bins=50, range=(-4, 4))
assert hist.dtype == want.dtype and (hist == want).all()
assert edges.dtype == want_edges.dtype and (edges == want_edges).all()
peak = int(hist.argmax())
print(f"peak bin [{edges[peak]:.2f}, {edges[peak + 1]:.2f}): {hist[peak]} of {x.size}")

# the range from the data, density, and float32 edges as NumPy gives them
dens, e32 = warplab.histogram(x, bins=256, density=True)
assert e32.dtype == np.float32 and np.allclose(dens, np.histogram(x, 256, density=True)[0])

# weights: sums per bin (float64 here, the weights' dtype)
w = rng.random(x.size)
sums, _ = warplab.histogram(x, bins=50, range=(-4, 4), weights=w)
assert np.allclose(sums, np.histogram(x, 50, (-4, 4), weights=w)[0])

# weighted bincount: total weight per label
labels = rng.integers(0, 10, size=x.size)
per_label = warplab.bincount(labels, weights=w)
assert per_label.shape == (10,) and np.allclose(per_label, np.bincount(labels, weights=w))
print("weight per label:", np.round(per_label, 1))
