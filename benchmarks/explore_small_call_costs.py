"""Where a small call's host time goes (issue 15), and what a C launch (``core/launch.c``)
saves, and what the C read of a ``DeviceScalar`` (``core/scalar.py``) saves over CuPy's
``float()``: host microseconds per call of the pieces of ``float(warplab.sum(x))`` on 1,024
float32 values, each piece alone in a loop, next to CuPy's and torch's calls. GPU machine;
not part of the package's API.

Usage: PYTHONPATH=src python3 benchmarks/explore_small_call_costs.py --out $OUT/costs.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import threading
import time

import cupy
import numpy as np

import warplab
from warplab.core import fastpath, launch, registry, scalar
from warplab.core.arrays import is_flat
from warplab.families.reduce import cuda as rcuda
from warplab.families.reduce.spec import spec

EMPTY = r'extern "C" __global__ void empty() {}'


def handle(k) -> int:
    """The CUfunction of a CuPy RawKernel (or Function)."""
    return int(k.kernel.ptr) if hasattr(k, "kernel") else int(k.ptr)


def host_us(fn, n: int, reps: int) -> float:
    """Median over ``reps`` bursts of ``n`` back-to-back calls, microseconds per call."""
    out = []
    for _ in range(reps):
        cupy.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
        cupy.cuda.get_current_stream().synchronize()
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args()
    n, reps = args.n, args.reps
    c_launch = launch.function()
    print("launch:", launch.status(), flush=True)
    x = cupy.random.rand(1024, dtype=np.float32)
    ref = float(x.get().astype(np.float64).sum())
    empty = cupy.RawKernel(EMPTY, "empty")
    empty((1,), (32,), ())
    stream = cupy.cuda.get_current_stream()
    sptr = stream.ptr
    s = spec("sum", x.dtype)
    p = rcuda.vec_plan(s)
    out = p.results.take(p.out)
    kptr = handle(p.kernel)
    eptr = handle(empty)
    rows: dict[str, float] = {}

    def piece(name: str, fn) -> None:
        fn()
        rows[name] = host_us(fn, n, reps)
        print(f"  {name:<48} {rows[name]:7.2f} us", flush=True)

    piece("empty kernel, CuPy launch", lambda: empty((1,), (32,), ()))
    if c_launch:
        piece("empty kernel, C launch", lambda: c_launch(eptr, 1, 32, 0, sptr, b""))
    piece("sum kernel, CuPy launch (the short path's call)",
          lambda: p.kernel((1,), p.block, (x, np.uint64(1024), p.partials, p.counter, out)))
    if c_launch:
        pp, pc, po = p.partials.data.ptr, p.counter.data.ptr, out.data.ptr
        piece("sum kernel, C launch (ints ready)",
              lambda: c_launch(kptr, 1, 512, 0, sptr, b"pQppp", x.data.ptr, 1024, pp, pc, po))
        piece("sum kernel, C launch (.data.ptr read per call)",
              lambda: c_launch(kptr, 1, 512, 0, sptr, b"pQppp", x.data.ptr, x.size,
                               p.partials.data.ptr, p.counter.data.ptr, out.data.ptr))
    piece("warplab.sum(x)", lambda: warplab.sum(x))
    piece("cupy.sum(x)", lambda: cupy.sum(x))
    piece("cupy.cuda.runtime.getDevice()", cupy.cuda.runtime.getDevice)
    piece("cupy.cuda.get_current_stream()", cupy.cuda.get_current_stream)
    piece("fastpath.stream_key()", fastpath.stream_key)
    piece("vec_plan(spec)", lambda: rcuda.vec_plan(s))
    piece("spec('sum', dtype)", lambda: spec("sum", x.dtype))
    piece("results.take (0-d DeviceScalar)", lambda: p.results.take(p.out))
    piece("cupy.ndarray((), dtype, memptr)", lambda: cupy.ndarray((), p.out, out.data))
    scalar_t = type(out)
    piece("DeviceScalar((), dtype, memptr)", lambda: scalar_t((), p.out, out.data))
    piece("DeviceScalar((), dtype) from CuPy's pool", lambda: scalar_t((), p.out))
    piece("cupy.empty((), dtype)", lambda: cupy.empty((), p.out))
    piece("memptr + 8", lambda: out.data + 8)
    lock = threading.Lock()

    def lock_pair() -> None:
        with lock:
            pass

    piece("threading.Lock() with-block", lock_pair)

    def lock_calls() -> None:
        lock.acquire()
        try:
            pass
        finally:
            lock.release()

    piece("threading.Lock() acquire/release", lock_calls)
    piece("is_flat + type check",
          lambda: type(x) is cupy.ndarray and x.size and is_flat(x))
    piece("registry.preferred_for_all + ran",
          lambda: registry.ran(registry.preferred_for_all("reduce", "cuda")))
    piece("np.uint64(n)", lambda: np.uint64(1024))
    piece("x.data.ptr", lambda: x.data.ptr)

    lat: dict[str, float] = {}

    def latency(name: str, fn) -> None:
        fn()
        vals = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(n // 3):
                fn()
            vals.append((time.perf_counter() - t0) / (n // 3) * 1e6)
        lat[name] = statistics.median(vals)
        print(f"  latency {name:<40} {lat[name]:7.2f} us", flush=True)

    pinned = cupy.cuda.alloc_pinned_memory(64)
    host = np.frombuffer(pinned, p.out, 1)

    def pinned_read():
        r = warplab.sum(x)
        r.data.copy_to_host_async(host.ctypes.data, r.nbytes, stream)
        stream.synchronize()
        return float(host[0])

    latency("float(warplab.sum(x))", lambda: float(warplab.sum(x)))
    base_float = cupy.ndarray.__float__  # CuPy's read of the same DeviceScalar
    latency("CuPy's float() of warplab.sum(x)", lambda: base_float(warplab.sum(x)))
    done = warplab.sum(x)
    stream.synchronize()
    latency("float(s) of a finished DeviceScalar (C read)", lambda: float(done))
    latency("CuPy's float() of a finished 0-d array", lambda: base_float(done))
    latency("float(cupy.sum(x))", lambda: float(cupy.sum(x)))
    latency("warplab.sum + pinned copy + sync", pinned_read)
    latency("empty launch + sync", lambda: (empty((1,), (32,), ()), stream.synchronize()))
    print(f"  pinned read {pinned_read()} ref {ref}", flush=True)
    if c_launch:
        def c_sum():
            o = p.results.take(p.out)
            c_launch(kptr, 1, 512, 0, sptr, b"pQppp", x.data.ptr, 1024, p.partials.data.ptr,
                     p.counter.data.ptr, o.data.ptr)
            return o
        got = float(c_sum())
        print(f"  C-launched sum {got} ref {ref} ok={abs(got - ref) <= 1e-5 * max(1, abs(ref))}")
        latency("float(C-launched sum)", lambda: float(c_sum()))
    # the result in mapped pinned host memory (UVA: the host address is the device address):
    # does CuPy's float() of such a 0-d array cost less than of one in device memory?
    mapped = cupy.cuda.alloc_pinned_memory(4096)
    mptr = mapped.ptr
    slot = [0]

    def mapped_sum():
        o = cupy.ndarray((), p.out, cupy.cuda.MemoryPointer(
            cupy.cuda.UnownedMemory(mptr + 8 * (slot[0] % 512), 8, mapped), 0))
        slot[0] += 1
        p.go.at(1, x, 1024, p.partials, p.counter, o)
        return o

    print(f"  mapped sum {float(mapped_sum())} ref {ref}", flush=True)
    piece("C-launched sum into mapped pinned memory", mapped_sum)
    latency("float(sum into mapped pinned memory)", lambda: float(mapped_sum()))
    plans = {}

    def lean_sum(a):
        key = (a.dtype, stream.ptr)
        q = plans.get(key)
        if q is None:
            q = plans[key] = rcuda.vec_plan(spec("sum", a.dtype))
        o = q.results.take(q.out)
        q.go.at(1, a, a.size, q.partials, q.counter, o)
        return o

    piece("lean sum (one dict lookup, take, C launch)", lambda: lean_sum(x))
    latency("float(lean sum)", lambda: float(lean_sum(x)))
    m = cupy.random.rand(64, 64, dtype=np.float32)
    piece("warplab.sum(m), 64 x 64 C-contiguous", lambda: warplab.sum(m))
    piece("cupy.ndarray((64,), float32, memptr)", lambda: cupy.ndarray((64,), m.dtype, out.data))
    piece("cupy.empty((64,), float32)", lambda: cupy.empty((64,), m.dtype))
    piece("axis record key (shape, strides, ptr, device)",
          lambda: ("mean", m.dtype, m.shape, m.strides, m.data.ptr % 16 == 0, 1, False, 0,
                   cupy.cuda.runtime.getDevice()))
    piece("warplab.histogram(x, 64, (0, 1))", lambda: warplab.histogram(x, 64, (0, 1)))
    latency("warplab.histogram(x, 64, (0, 1))[0].get()",
            lambda: warplab.histogram(x, 64, (0, 1))[0].get())
    piece("warplab.mean(m, axis=1)", lambda: warplab.mean(m, axis=1))
    latency("warplab.mean(m, axis=1).get()", lambda: warplab.mean(m, axis=1).get())
    piece("cupy.empty(64, int64)", lambda: cupy.empty(64, np.int64))
    piece("scalar.empty(64, float32) (a DeviceArray)", lambda: scalar.empty(64, np.float32))
    piece("cupy.empty(64, float32)", lambda: cupy.empty(64, np.float32))
    r_done = warplab.mean(m, axis=1)
    stream.synchronize()
    latency("get() of a finished DeviceArray (C copy)", r_done.get)
    latency("CuPy's get() of a finished 64-element array", lambda: cupy.ndarray.get(r_done))
    latency("CuPy's get() of warplab.mean(m, axis=1)",
            lambda: cupy.ndarray.get(warplab.mean(m, axis=1)))
    try:
        import torch

        t = torch.from_dlpack(x)
        tm = torch.from_dlpack(m)
        piece("torch.sum(t)", lambda: torch.sum(t))
        latency("torch.sum(t).item()", lambda: torch.sum(t).item())
        t_done = torch.sum(t)
        torch.cuda.synchronize()
        latency("t.item() of a finished 0-d tensor", lambda: t_done.item())
        piece("torch.histc(t, 64, 0, 1)", lambda: torch.histc(t, 64, 0, 1))
        latency("torch.histc(t, 64, 0, 1).cpu()", lambda: torch.histc(t, 64, 0, 1).cpu())
        piece("torch.mean(tm, dim=1)", lambda: torch.mean(tm, dim=1))
        latency("torch.mean(tm, dim=1).cpu()", lambda: torch.mean(tm, dim=1).cpu())
    except Exception as e:  # noqa: BLE001
        print("torch:", e)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"host_us": rows, "latency_us": lat, "launch": launch.status()}, f,
                      indent=1)


if __name__ == "__main__":
    main()
