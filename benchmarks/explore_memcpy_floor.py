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
(``win_copy``), and the whole path launched plainly and overlapped (``win_all_plain``,
``win_all_overlap``: ``windows.run_windows``'s ``overlap``).
``--words W`` (repeatable) also times the warp kernel with ``WarpClasses.words`` W instead of
the default's (bit 4: in warps whose destinations are not scattered, the misaligned
thread-level buffers copied by their own lane from aligned 8-byte source words, not through
the byte stream), in the same run.
``--blev-chunk BYTES`` (repeatable) also times the two kernels with the BLEV kernel's chunks
of BYTES instead of the default's (``WarpClasses.chunk``: the warp kernel queues each large
buffer's chunks, the BLEV kernel copies one a block at a time), in the same run.
``--define NAME=V`` (repeatable) compiles the family's kernels with that constant instead of
``cuda.DEFINES``' (one process per setting: the A/B of a compile-time choice).

A cell is ``SIZE:TOTAL:LAYOUT`` or ``LO-HI:TOTAL:LAYOUT:aN``: sizes uniform multiples of N in
[LO, HI] (the grid's draw, ``cells.draw_sizes``), as many as fill TOTAL on average, packed in
order (C) or in a random order (S) on the source and destination side (``C_S``: consecutive
sources, shuffled destinations). Every record is checked as the grid checks its own: after a
poisoned run, the bytes of ~250 sampled buffers, the guards and the destination's byte sum.

Usage: PYTHONPATH=src python3 benchmarks/explore_memcpy_floor.py [--json PATH] [--cells ...]
[--warp-trigger 0|1] [--group2 N] [--words W ...] [--blev-chunk BYTES ...] [--windows-parts]
[--define NAME=V ...]
"""
from __future__ import annotations

import argparse
import json
from typing import Any, NamedTuple

import cupy
import numpy as np
from host_timing import device_per_call, spin_and_nop

import warplab
from warplab.families.memcpy import blev_queue, cuda, spec, windows
from warplab.families.memcpy.spec import WARP_TIERS_WORDS
from warplab.lab.campaigns.memcpy import cells as mcells
from warplab.lab.console import parse_size

#: (lo, hi, align, total, layout)
CELLS = [(1024, 1024, 1, 64 << 20, "C_C"), (1024, 1024, 1, 64 << 20, "S_S"),
         (4096, 4096, 1, 64 << 20, "C_C"), (65536, 65536, 1, 64 << 20, "C_C"),
         (1024, 1024, 1, 256 << 20, "C_C"), (65536, 65536, 1, 256 << 20, "C_C")]
LAYOUT = {"C": "consecutive", "S": "shuffle"}
CALLS, SAMPLES = 20, 7
SPIN, NOP = spin_and_nop()


def timed(fn) -> float:
    """Median device seconds per call of ``CALLS`` calls queued behind a spinning kernel."""
    return device_per_call(fn, CALLS, SAMPLES,
                           lambda: SPIN(6_000_000))


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
    ap.add_argument("--words", type=int, action="append", default=[], metavar="W",
                    help="also time the warp kernel with WarpClasses.words W (0-7; repeatable)")
    ap.add_argument("--blev-chunk", type=int, action="append", default=[], metavar="BYTES",
                    help="also time the warp kernel and its BLEV kernel with BLEV chunks of "
                    "BYTES (a power of two; repeatable)")
    ap.add_argument("--windows-parts", action="store_true",
                    help="also time the destination windows' path piece by piece")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=V",
                    help="compile the family's kernels with -DNAME=V (repeatable)")
    args = ap.parse_args()
    shapes = {"": WARP_TIERS_WORDS}
    if args.group2:
        shapes[f"g{args.group2}_"] = WARP_TIERS_WORDS._replace(group2=args.group2)
    for w in args.words:
        if not 0 <= w <= 7:
            ap.error(f"--words {w}: want 0 to 7")
        shapes[f"w{w}_"] = WARP_TIERS_WORDS._replace(words=w)
    for c in args.blev_chunk:
        if c < 4096 or c & (c - 1):
            ap.error(f"--blev-chunk {c}: want a power of two of at least 4096")
        shapes[f"c{c >> 10}k_"] = WARP_TIERS_WORDS._replace(chunk=c)
    if args.warp_trigger is not None:  # before any kernel of the family is compiled
        cuda.DEFINES["WARPLAB_MEMCPY_WARP_TRIGGER"] = args.warp_trigger
    for d in args.define:
        name, _, value = d.partition("=")
        if name not in cuda.DEFINES or not value.lstrip("-").isdigit():
            ap.error(f"--define {d!r}: want NAME=INTEGER, NAME one of {sorted(cuda.DEFINES)}")
        cuda.DEFINES[name] = int(value)
    try:
        cells = CELLS if args.cells is None else [parse_cell(x) for x in args.cells.split(",")]
    except ValueError as e:
        ap.error(f"--cells: {e}")
    dev = cupy.cuda.runtime.getDevice()
    blev_grid = cuda.BLEV_BLOCKS_PER_SM * cuda.sms(dev)  # the BLEV kernel's grid
    doc: dict[str, Any] = {"calls": CALLS, "samples": SAMPLES, "rows": [],
                           "device": cupy.cuda.runtime.getDeviceProperties(dev)["name"].decode()}
    doc["defines"] = dict(cuda.DEFINES)
    for cell in cells if args.cells else ():
        run_cell(doc, cell, shapes, args.windows_parts)
    if args.cells:
        write(doc, args.json)
        return
    doc["nop_1_us"] = 1e6 * timed(NOP)
    doc["nop_blev_grid_us"] = 1e6 * timed(lambda: NOP(blev_grid))
    c = WARP_TIERS_WORDS
    for overlap in (False, True):
        go, _ = cuda._launches(cuda._warp_expr(c), cuda.WARP_THREADS, c.wlev_max, c.chunk,
                               c.loads, (cuda._PARTS_LOG2[0],), overlap)
        stream, q = blev_queue.stream_queue(dev)
        z = cupy.zeros(1, np.uint64)
        doc[f"blev_empty_{'overlap' if overlap else 'plain'}_us"] = 1e6 * timed(
            lambda go=go, q=q, z=z: go.blev.on_stream(
                cupy.cuda.get_current_stream().ptr, go.blev_grid, z, z, z, q.counter_at, 0, 0))
    print(f"{doc['device']}: nop 1 block {doc['nop_1_us']:.2f} us, nop {blev_grid} blocks "
          f"{doc['nop_blev_grid_us']:.2f} us, empty BLEV plain {doc['blev_empty_plain_us']:.2f}"
          f" overlap {doc['blev_empty_overlap_us']:.2f} us", flush=True)
    for cell in cells:
        run_cell(doc, cell, shapes, args.windows_parts)
    write(doc, args.json)


def parse_cell(text: str) -> tuple[int, int, int, int, str]:
    """``SIZE:TOTAL:LAYOUT`` or ``LO-HI:TOTAL:LAYOUT:aN`` as (lo, hi, align, total, layout)."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or parts[2] not in ("C_C", "C_S", "S_C", "S_S") or (
            len(parts) == 4 and not (parts[3][:1] == "a" and parts[3][1:].isdigit())):
        raise ValueError(f"{text!r}: want SIZE:TOTAL:LAYOUT or LO-HI:TOTAL:LAYOUT:aN, LAYOUT "
                         "one of C_C, C_S, S_C, S_S")
    lo, _, hi = parts[0].partition("-")
    align = int(parts[3][1:]) if len(parts) == 4 else 1
    return parse_size(lo), parse_size(hi or lo), align, parse_size(parts[1]), parts[2]


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
    go = windows._launches(c, w, dev, windows.OVERLAP)
    grouped = cupy.empty(3 * b.count, dtype=np.uint64)

    def judge() -> None:
        stream, q = blev_queue.stream_queue(dev)
        with q.lock:
            hdr, tally = q.windows_at()
            windows.judge_and_group(go, stream, q, b, w, hdr, tally, grouped.data.ptr)

    def copy() -> None:
        stream, q = blev_queue.stream_queue(dev)
        with q.lock:
            hdr, _ = q.windows_at()
            windows.copy_via(go, stream, q, b.count, hdr, w.runs, True)

    return {"win_judge": judge, "win_copy": copy,
            "win_all_plain": lambda: windows.run_windows(b, c, w, False),
            "win_all_overlap": lambda: windows.run_windows(b, c, w, True)}


class CellArrays(NamedTuple):
    """One cell's batch on the device (``cell_arrays``): the sizes, the buffer count, the data
    bytes, the source and destination arenas (guard bytes on both ends) and the address
    arrays into them, and what ``exact`` compares."""

    sizes: Any
    count: int  # type: ignore[assignment]  # a field named as tuple's method
    data: int
    src: Any
    dst: Any
    sp: Any
    dp: Any
    sample: tuple[Any, Any, int]

    def exact(self) -> bool:
        """Whether the destination holds the batch's copy as the grid checks it (the bytes of
        ~250 sampled buffers, the guards, the destination's byte sum)."""
        ss, sd, src_sum = self.sample
        return bool(mcells.check_destination(cupy, self.src, self.dst, self.data, ss, sd,
                                             src_sum)[0])


def cell_arrays(lo: int, hi: int, align: int, total: int, layout: str) -> CellArrays:
    """The grid's draw of a cell: sizes uniform multiples of ``align`` in [lo, hi] filling
    ``total`` on average, packed in order or shuffled on each side (``layout``, e.g. C_S)."""
    g = mcells.GUARD
    sizes = mcells.draw_sizes(cupy, lo, hi, align, total)
    count = int(sizes.size)
    so = mcells.layout_offsets(cupy, sizes, LAYOUT[layout[0]], 2)
    do = mcells.layout_offsets(cupy, sizes, LAYOUT[layout[2]], 3)
    data = int(sizes.sum())
    src = cupy.random.randint(0, 256, data + 2 * g, dtype=np.uint8)
    dst = cupy.empty(data + 2 * g, np.uint8)
    sp = (so + (src.data.ptr + g)).astype(np.uint64)
    dp = (do + (dst.data.ptr + g)).astype(np.uint64)
    h_sizes, h_so, h_do = sizes.get(), so.get(), do.get()
    picks = mcells.sample_picks(count, int(np.argmax(h_sizes)))
    ss, sd = (cupy.asarray(x) for x in mcells.sample_bytes(h_sizes[picks], h_so[picks],
                                                           h_do[picks]))
    src_sum = int(src[g:g + data].sum(dtype=np.uint64))
    return CellArrays(sizes, count, data, src, dst, sp, dp, (ss, sd, src_sum))


def run_cell(doc: dict, cell: tuple[int, int, int, int, str], shapes: dict[str, Any],
             windows_parts: bool = False) -> None:
    """One cell's records (appended to ``doc["rows"]``, printed); ``cell``: (lo, hi, align,
    total, layout); ``shapes``: the warp kernel's shapes to time, by the prefix of their
    records' names; ``windows_parts``: the destination windows' path in parts too
    (``windows_targets``)."""
    lo, hi, align, total, layout = cell
    c = cell_arrays(lo, hi, align, total, layout)
    sizes, count, data, src, dst, sp, dp = c.sizes, c.count, c.data, c.src, c.dst, c.sp, c.dp
    label = f"{lo}" if lo == hi else f"{lo}-{hi} a{align}"
    row: dict[str, Any] = {"min": lo, "max": hi, "align": align, "size": lo if lo == hi else
                           None, "total": total, "data": data, "count": count, "layout": layout}
    row["copy_us"] = 1e6 * timed(lambda: cupy.cuda.runtime.memcpyAsync(
        dst.data.ptr, src.data.ptr, data, 3, cupy.cuda.get_current_stream().ptr))
    targets = {"public": lambda: warplab.memcpy_batched(sp, dp, sizes)}
    for pre, shape in shapes.items():
        for overlap in (False, True):
            tag = "overlap" if overlap else "plain"
            two = cuda.DeviceBatch(sp, dp, sizes, count, None, None)
            targets[f"{pre}two_{tag}"] = (lambda b=two, o=overlap, c=shape:
                                          cuda.run_warp_classes(b, c, o))
            if hi <= shape.wlev_max:
                one = cuda.DeviceBatch(sp, dp, sizes, count, None, hi)
                targets[f"{pre}one_{tag}"] = (lambda b=one, o=overlap, c=shape:
                                              cuda.run_warp_classes(b, c, o))
    if windows_parts:
        targets.update(windows_targets(cuda.DeviceBatch(sp, dp, sizes, count, None, None)))
    for name, fn in targets.items():
        dst.fill(mcells.POISON)
        if name == "win_copy":  # the header as the judging leaves it
            targets["win_judge"]()
        fn()
        ok = name == "win_judge" or c.exact()
        us = 1e6 * timed(fn)
        row[name] = {"us": us, "pct_copy": 100 * row["copy_us"] / us, "ok": ok}
    doc["rows"].append(row)
    print(f"{label:>10} B {total >> 20:>4} MiB {layout} copy {row['copy_us']:6.1f} us | " +
          " ".join(f"{k} {v['us']:6.1f} ({v['pct_copy']:4.1f}%){'' if v['ok'] else ' WRONG'}"
                   for k, v in row.items() if isinstance(v, dict)), flush=True)


if __name__ == "__main__":
    main()
