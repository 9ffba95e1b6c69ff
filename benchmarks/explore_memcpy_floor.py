"""Where the batched copy's time goes beside the runtime's copy of the same bytes (GPU
machine; not part of the package's API).

At 64 MiB every cell of 1 KiB buffers or more costs ~7 us more than ``cudaMemcpyAsync`` of
the same total (42-44 us against 35 on the H200). This splits the call's device time: the
public call (``memcpy_batched``, the default) against the warp kernel and its BLEV kernel
launched directly (``cuda.run_warp_classes`` with ``WARP_TIERS_WORDS``: ``two``: the host
does not know the largest size, the pointer form's two launches; ``one``: it does and no
buffer exceeds 8 KiB, ``copy_batched``'s one launch), each the plain way and with
``overlap`` (``Prepared(overlap=True)``: programmatic stream serialization, the next
kernel's blocks scheduled while the previous one drains); the empty BLEV kernel alone (1,056
blocks that return at once); an empty kernel of one block and of 1,056 blocks (the launch's
own gap in a stream).

Timing: a spinning kernel of ~3 ms queued first, then an event, ``CALLS`` calls back to
back, an event: the host's launch time is hidden and the events see the device's time per
call, median of ``SAMPLES``. Every copy variant's destination is compared with its source.

``--warp-trigger 0|1`` compiles the warp kernel without its early trigger (the library's
setting: its BLEV kernel's blocks placed as the warp kernel's blocks exit) or with it (placed
once the warp kernel's blocks have started): the A/B for the 64 KiB cells at 1 GiB
(``--cells 65536:1G:C_C,65536:1G:S_S``), run once per setting (one process each).
``--group2 N`` also times the warp kernel with the second group tier's buffers (257 B-1 KiB)
copied by groups of N lanes instead of the default's whole warp (``WarpClasses.group2``: 16
copies two buffers a warp at a time, every load of both before their stores), in the same run.
``--windows-parts`` also times, where the batch takes the destination windows' path (2^20 to
2^27 buffers), its parts alone: the count and group kernels (``win_judge``: for a batch they do
not group, the judging alone), the copy's two kernels through the header the judging left
(``win_copy``), and the whole path (``win_all``, ``windows.run_windows``).

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_floor.py [--json PATH] [--cells ...]
[--warp-trigger 0|1] [--group2 N] [--windows-parts]
"""
from __future__ import annotations

import argparse
import json
from typing import Any

import cupy
import numpy as np
from host_timing import device_per_call

import warplab
from warplab.families.memcpy import cuda, spec, windows
from warplab.families.memcpy.spec import WARP_TIERS_WORDS
from warplab.lab.console import parse_size

CELLS = [(1024, 64 << 20, "C_C"), (1024, 64 << 20, "S_S"), (4096, 64 << 20, "C_C"),
         (65536, 64 << 20, "C_C"), (1024, 256 << 20, "C_C"), (65536, 256 << 20, "C_C")]
CALLS, SAMPLES = 20, 7
_SRC = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
extern "C" __global__ void nop() { }
"""
_MOD = cupy.RawModule(code=_SRC)
SPIN, NOP = _MOD.get_function("spin"), _MOD.get_function("nop")


def timed(fn) -> float:
    """Median device seconds per call of ``CALLS`` calls queued behind a spinning kernel."""
    return device_per_call(fn, CALLS, SAMPLES,
                           lambda: SPIN((1,), (1,), (np.int64(6_000_000),)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--cells", default=None, help="SIZE:TOTAL:LAYOUT,... (e.g. 65536:1G:C_C; "
                    "default: the module's CELLS), the empty launches skipped")
    ap.add_argument("--warp-trigger", type=int, choices=(0, 1), default=None,
                    help="compile the warp kernel with WARPLAB_MEMCPY_WARP_TRIGGER 0 or 1 "
                    "(default: the library's)")
    ap.add_argument("--group2", type=int, choices=(2, 4, 8, 16), default=None,
                    help="also time the warp kernel with groups of N lanes for 257 B-1 KiB")
    ap.add_argument("--windows-parts", action="store_true",
                    help="also time the destination windows' path piece by piece")
    args = ap.parse_args()
    shapes = {"": WARP_TIERS_WORDS}
    if args.group2:
        shapes[f"g{args.group2}_"] = WARP_TIERS_WORDS._replace(group2=args.group2)
    if args.warp_trigger is not None:  # before any kernel of the family is compiled
        cuda.DEFINES["WARPLAB_MEMCPY_WARP_TRIGGER"] = args.warp_trigger
    cells = CELLS if args.cells is None else [
        (parse_size(a), parse_size(b), c)
        for a, b, c in (x.split(":") for x in args.cells.split(","))]
    dev = cupy.cuda.runtime.getDevice()
    blev_grid = cuda.BLEV_BLOCKS_PER_SM * cuda.sms(dev)  # the BLEV kernel's grid
    doc: dict[str, Any] = {"calls": CALLS, "samples": SAMPLES, "rows": [],
                           "device": cupy.cuda.runtime.getDeviceProperties(dev)["name"].decode()}
    for size, total, layout in cells if args.cells else ():
        run_cell(doc, size, total, layout, shapes, args.windows_parts)
    if args.cells:
        write(doc, args.json)
        return
    doc["nop_1_us"] = 1e6 * timed(lambda: NOP((1,), (1,), ()))
    doc["nop_blev_grid_us"] = 1e6 * timed(lambda: NOP((blev_grid,), (256,), ()))
    c = WARP_TIERS_WORDS
    for overlap in (False, True):
        go, _ = cuda._launches(cuda._warp_expr(c), cuda.WARP_THREADS, c.wlev_max, c.chunk,
                               c.loads, (cuda._PARTS_LOG2[0],), overlap)
        stream, q = cuda.stream_queue(dev)
        z = cupy.zeros(1, np.uint64)
        doc[f"blev_empty_{'overlap' if overlap else 'plain'}_us"] = 1e6 * timed(
            lambda go=go, q=q, z=z: go.blev.on_stream(
                cupy.cuda.get_current_stream().ptr, go.blev_grid, z, z, z, q.counter_at, 0, 0))
    print(f"{doc['device']}: nop 1 block {doc['nop_1_us']:.2f} us, nop {blev_grid} blocks "
          f"{doc['nop_blev_grid_us']:.2f} us, empty BLEV plain {doc['blev_empty_plain_us']:.2f}"
          f" overlap {doc['blev_empty_overlap_us']:.2f} us", flush=True)
    for size, total, layout in cells:
        run_cell(doc, size, total, layout, shapes, args.windows_parts)
    write(doc, args.json)


def write(doc: dict, path: str | None) -> None:
    if path:
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)


def windows_targets(b: Any) -> dict[str, Any]:
    """The destination windows' path of batch ``b`` (a ``cuda.DeviceBatch``) in parts: the
    judging (count and group kernels), the copy through the header the judging left, the
    whole; none where the batch does not take that path."""
    if not spec.WINDOWS_MIN_COUNT <= b.count <= spec.WINDOWS_MAX_COUNT:
        return {}
    c, w = WARP_TIERS_WORDS, spec.WINDOWS
    dev = cupy.cuda.runtime.getDevice()
    go = windows._launches(c, w, dev)
    grouped = cupy.empty(3 * b.count, dtype=np.uint64)

    def judge() -> None:
        stream, q = cuda.stream_queue(dev)
        with q.lock:
            hdr, tally = q.windows_at()
            windows.judge_and_group(go, stream, q, b, w, hdr, tally, grouped.data.ptr)

    def copy() -> None:
        stream, q = cuda.stream_queue(dev)
        with q.lock:
            hdr, _ = q.windows_at()
            windows.copy_via(go, stream, q, b.count, hdr, w.runs, True)

    return {"win_judge": judge, "win_copy": copy,
            "win_all": lambda: windows.run_windows(b, c, w)}


def run_cell(doc: dict, size: int, total: int, layout: str, shapes: dict[str, Any],
             windows_parts: bool = False) -> None:
    """One cell's records (appended to ``doc["rows"]``, printed); ``shapes``: the warp
    kernel's shapes to time, by the prefix of their records' names; ``windows_parts``: the
    destination windows' path in parts too (``windows_targets``)."""
    count = total // size
    src = cupy.random.randint(0, 256, total, dtype=np.uint8)
    dst = cupy.empty(total, np.uint8)
    rng = np.random.default_rng(size + total)
    so = np.arange(count, dtype=np.uint64) * size
    do = so.copy()
    if layout == "S_S":
        so, do = so[rng.permutation(count)], do[rng.permutation(count)]
    sp, dp = cupy.asarray(so + src.data.ptr), cupy.asarray(do + dst.data.ptr)
    sizes = cupy.full(count, size, np.int64)
    rs = cupy.asarray((so // size).astype(np.int64))
    rd = cupy.asarray((do // size).astype(np.int64))
    row: dict[str, Any] = {"size": size, "total": total, "count": count, "layout": layout}
    row["copy_us"] = 1e6 * timed(lambda: cupy.cuda.runtime.memcpyAsync(
        dst.data.ptr, src.data.ptr, total, 3, cupy.cuda.get_current_stream().ptr))
    targets = {"public": lambda: warplab.memcpy_batched(sp, dp, sizes)}
    for pre, shape in shapes.items():
        for overlap in (False, True):
            tag = "overlap" if overlap else "plain"
            two = cuda.DeviceBatch(sp, dp, sizes, count, None, None)
            targets[f"{pre}two_{tag}"] = (lambda b=two, o=overlap, c=shape:
                                          cuda.run_warp_classes(b, c, o))
            if size <= shape.wlev_max:
                one = cuda.DeviceBatch(sp, dp, sizes, count, None, size)
                targets[f"{pre}one_{tag}"] = (lambda b=one, o=overlap, c=shape:
                                              cuda.run_warp_classes(b, c, o))
    if windows_parts:
        targets.update(windows_targets(cuda.DeviceBatch(sp, dp, sizes, count, None, None)))
    for name, fn in targets.items():
        dst.fill(0)
        if name == "win_copy":  # the header as the judging leaves it
            targets["win_judge"]()
        fn()
        ok = name == "win_judge" or bool(
            (dst.reshape(count, size)[rd] == src.reshape(count, size)[rs]).all())
        us = 1e6 * timed(fn)
        row[name] = {"us": us, "pct_copy": 100 * row["copy_us"] / us, "ok": ok}
    doc["rows"].append(row)
    print(f"{size:>6} B {total >> 20:>4} MiB {layout} copy {row['copy_us']:6.1f} us | " +
          " ".join(f"{k} {v['us']:6.1f} ({v['pct_copy']:4.1f}%){'' if v['ok'] else ' WRONG'}"
                   for k, v in row.items() if isinstance(v, dict)), flush=True)


if __name__ == "__main__":
    main()
