"""The ``warplab`` command (also ``python -m warplab``).

    warplab device [--measure] [--json]
    warplab histogram FILE | --generate KIND --size N  [--bins B] [--variant a,b|all] ...
    warplab reduce --size N --dtype D --op OP [--variant a,b|all] [--compare]
    warplab matmul --size N [--m M --n N --k K] --dtype D [--variant a,b|all] [--compare]
    warplab bench [histogram|reduce|matmul|all] [--quick|--full|--table] --out DIR
    warplab report DIR

User mistakes (bad values, wrong types, missing files, no GPU when one is asked for) print one
line on stderr and exit with status 2.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, Sequence

from .errors import WarplabError

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str) -> int:
    """``1048576``, ``2^20``, ``64K``, ``1M``, ``1GiB``, ``4G`` -> bytes."""
    s = text.strip().lower().replace("ib", "").replace("b", "")
    m = re.fullmatch(r"2\^(\d+)", s)
    if m:
        return 1 << int(m.group(1))
    m = re.fullmatch(r"(\d+)([kmgt]?)", s)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 1048576, 2^20, 64K, 1G)")
    return int(m.group(1)) * _UNITS[m.group(2)]


def _csv(text: str) -> list[str]:
    return [x.strip() for x in text.split(",") if x.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="warplab", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", choices=["cuda", "cpu", "gpu"], default=None,
                   help="backend (default: cuda if usable, else cpu; env WARPLAB_DEVICE)")
    sub = p.add_subparsers(dest="cmd", required=True)

    d = sub.add_parser("device", help="deviceQuery-style facts and the measured copy bandwidth")
    d.add_argument("--measure", action="store_true", help="measure every ceiling (read, "
                   "H2D/D2H pinned and pageable, SGEMM, DGEMM) next to the datasheet numbers")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")

    h = sub.add_parser("histogram", help="histogram of a file or generated data, with timings")
    h.add_argument("file", nargs="?", help="input file (read via mmap)")
    h.add_argument("--generate", choices=["uniform", "const", "text", "random"])
    h.add_argument("--size", type=parse_size, help="bytes to generate (e.g. 1G, 2^30)")
    h.add_argument("--bins", default="ascii128", choices=["bytes", "ascii128", "letters"])
    h.add_argument("--variant", default=None, help="comma-separated names or 'all' (default: "
                   "the default variant)")
    h.add_argument("--compare", action="store_true", help="also time the comparators")
    _timing_args(h, runs=20, warmup=3)
    h.add_argument("--top", type=int, default=16, help="bins to print (0 = all)")
    h.add_argument("--json", dest="json_path", help="write the results JSON here")

    rd = sub.add_parser("reduce", help="the reduction lecture's table for one input")
    rd.add_argument("--size", type=parse_size, default=1 << 24, help="elements (default 2^24)")
    rd.add_argument("--dtype", default="int32", choices=["int32", "int64", "float32", "float64"])
    rd.add_argument("--op", default="sum", choices=["sum", "min", "max", "mean"])
    rd.add_argument("--data", default="random", choices=["random", "equal"])
    rd.add_argument("--variant", default="all", help="comma-separated names or 'all'")
    rd.add_argument("--compare", action="store_true", help="also time the comparators")
    _timing_args(rd, runs=20, warmup=3)
    rd.add_argument("--json", dest="json_path", help="write the results JSON here")

    mm = sub.add_parser("matmul", help="C = A B: GFLOP/s, %% of cuBLAS, flop-to-word analysis")
    mm.add_argument("--size", type=parse_size, default=1024, help="M = N = K (default 1024)")
    for dim in ("m", "n", "k"):
        mm.add_argument(f"--{dim}", type=parse_size, help=f"{dim.upper()} (default: --size)")
    mm.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    mm.add_argument("--variant", default="all", help="comma-separated names or 'all'")
    mm.add_argument("--compare", action="store_true", help="also time cuBLAS (cupy.matmul)")
    _timing_args(mm, runs=20, warmup=3)
    mm.add_argument("--json", dest="json_path", help="write the results JSON here")

    b = sub.add_parser("bench", help="a measurement campaign into a timestamped folder")
    b.add_argument("family", nargs="?", default="histogram",
                   choices=["histogram", "reduce", "matmul", "all"])
    g = b.add_mutually_exclusive_group()
    for name, what in (("quick", "small sizes, a few minutes on a GPU (the default)"),
                       ("full", "every size of the family's sweep (see the README)"),
                       ("table", "the closing table: the seeds' sizes, all variants")):
        g.add_argument(f"--{name}", dest="campaign", action="store_const", const=name, help=what)
    b.add_argument("--out", default="runs", help="root folder (default: runs/)")
    b.add_argument("--sizes", type=lambda t: [parse_size(x) for x in _csv(t)])
    b.add_argument("--data", type=_csv, help="uniform,const,text,random")
    b.add_argument("--bins", type=_csv, help="bytes,ascii128,letters")
    b.add_argument("--variant", type=_csv, help="variant names (default: all)")
    b.add_argument("--dtypes", type=_csv, help="reduce: int32,int64,float32,float64; "
                   "matmul: float32,float64")
    b.add_argument("--ops", type=_csv, help="reduce: sum,min,max,mean")
    b.add_argument("--no-compare", action="store_true", help="skip the comparators")
    _timing_args(b, runs=None, warmup=None)

    r = sub.add_parser("report", help="figures and an HTML page from results JSON")
    r.add_argument("src", help="a results folder or JSON file")
    r.add_argument("--out", default=None, help="output folder (default: SRC/report)")
    return p


def _timing_args(p: argparse.ArgumentParser, runs: int | None, warmup: int | None) -> None:
    p.add_argument("--runs", type=int, default=runs, help="timed runs")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed warm-up runs")
    p.add_argument("--pinned", action="store_true", help="pinned (page-locked) host memory")
    p.add_argument("--max-seconds", type=float, default=2.0,
                   help="time budget per measurement: fewer runs (>= 3) for slow ones")
    p.add_argument("--flush-l2", action="store_true", help="flush L2 before every run")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        from . import _commands

        return int(getattr(_commands, f"cmd_{args.cmd}")(args) or 0)
    except (ValueError, TypeError, OSError, NotImplementedError, WarplabError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"warplab: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("warplab: interrupted", file=sys.stderr)
        return 130


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=1, default=str)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
