"""The ``warplab`` command (also ``python -m warplab``).

    warplab device [--measure] [--json]
    warplab histogram FILE | --generate KIND --size N  [--bins B] [--variant a,b|all] ...
    warplab reduce --size N --dtype D --op OP [--variant a,b|all] [--compare]
    warplab matmul --size N [--m M --n N --k K] --dtype D [--variant a,b|all] [--compare]
    warplab bench [FAMILY|all] [--quick|--full|--table] --out DIR
    warplab report DIR

Each family contributes its own subcommand (``families/<family>/command.py``). Mistakes in what
the user asked for (bad values, wrong types, missing files, no GPU when one is asked for) print
one line on stderr and exit with status 2; anything else is a bug and shows its traceback
(``--debug`` shows it for every error).
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn, Sequence

from warplab.lab import commands
from warplab.lab.console import csv, parse_size, timing_args
from warplab.core.errors import DeviceOutOfMemoryError, DeviceUnavailableError, UsageError
from warplab.lab.campaigns import CAMPAIGNS



class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (``PROG: error: MESSAGE (see PROG --help)``)
    and exit status 2; its subcommand parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--device`` and ``--debug``, before or after the subcommand (a subcommand's copy leaves
    the value given before it alone unless given itself)."""
    p.add_argument("--device", choices=["cuda", "cpu", "gpu"],
                   default=None if top else argparse.SUPPRESS,
                   help="backend (default: cuda if usable, else cpu; env WARPLAB_DEVICE)")
    p.add_argument("--debug", action="store_true", default=False if top else argparse.SUPPRESS,
                   help="show the traceback of every error")


def _parser() -> argparse.ArgumentParser:
    from warplab import __version__

    p = _Parser(prog="warplab", description=__doc__.split("\n\n")[0])
    p.add_argument("--version", action="version", version=f"warplab {__version__}")
    _global_options(p, top=True)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    d = sub.add_parser("device", help="deviceQuery-style facts and the measured copy bandwidth")
    d.add_argument("--measure", action="store_true", help="measure every ceiling (read, "
                   "H2D/D2H pinned and pageable, SGEMM, DGEMM) next to the datasheet numbers")
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")

    for family in CAMPAIGNS:
        commands.family_command(family).add_parser(sub)

    b = sub.add_parser("bench", help="a measurement campaign into a timestamped folder")
    b.add_argument("family", nargs="?", default="histogram", choices=[*CAMPAIGNS, "all"])
    g = b.add_mutually_exclusive_group()
    for name, what in (("quick", "small sizes, a few minutes on a GPU (the default)"),
                       ("full", "every size of the family's sweep (see the README)"),
                       ("table", "the closing table: the seeds' sizes, all variants")):
        g.add_argument(f"--{name}", dest="campaign", action="store_const", const=name, help=what)
    b.add_argument("--out", default="runs", help="root folder (default: runs/)")
    b.add_argument("--sizes", type=lambda t: [parse_size(x) for x in csv(t)])
    b.add_argument("--data", type=csv, help="uniform,const,text,random")
    b.add_argument("--bins", type=csv, help="bytes,ascii128,letters")
    b.add_argument("--variant", type=csv, help="variant names (default: all)")
    b.add_argument("--dtypes", type=csv, help="reduce: int32,int64,float32,float64; "
                   "matmul: float32,float64")
    b.add_argument("--ops", type=csv, help="reduce: sum,min,max,mean")
    b.add_argument("--no-compare", action="store_true", help="skip the comparators")
    b.add_argument("--dry-run", action="store_true", help="memcpy: print the campaign's plan "
                   "and estimated time (on the CPU), measure nothing")
    b.add_argument("--deadline", type=float, default=None, metavar="S",
                   help="memcpy --full: start no new cell after S seconds (the JSON keeps "
                        "what ran)")
    timing_args(b, runs=None, warmup=None)

    r = sub.add_parser("report", help="figures and an HTML page from results JSON")
    r.add_argument("src", help="a results folder or JSON file")
    r.add_argument("--out", default=None, help="output folder (default: SRC/report)")

    c = sub.add_parser("compare", help="B against A: matched records, B/A, faster/slower/same")
    c.add_argument("a", help="the baseline results JSON")
    c.add_argument("b", help="the results JSON compared with it")
    c.add_argument("--threshold", type=float, default=0.0, metavar="PCT",
                   help="minimum relative difference (%%) on top of the noise (default 0)")
    c.add_argument("--fail-on-slower", action="store_true",
                   help="exit with status 1 when any pair is SLOWER (for CI)")
    c.add_argument("--figure", default=None, metavar="PATH", help="write the B/A figure (PNG)")
    c.add_argument("--json", dest="json_path", default=None, metavar="PATH",
                   help="write the comparison as JSON")
    for sp in dict.fromkeys(sub.choices.values()):
        _global_options(sp, top=False)
    return p


def is_user_error(exc: BaseException) -> bool:
    """True for an error about what the user asked for: warplab's :class:`UsageError` (bad
    values, types, names, options), a device problem (no GPU, out of memory) or a file or
    host-memory problem. Anything else (a plain ``ValueError``/``TypeError`` from Python or a
    library, a kernel that does not compile) is a bug and shows its traceback."""
    return isinstance(exc, (UsageError, DeviceUnavailableError, DeviceOutOfMemoryError,
                            OSError, MemoryError, NotImplementedError))


def _negative_values(argv: Sequence[str]) -> list[str]:
    """``--opt -1M`` as ``--opt=-1M``: argparse takes a value that starts with ``-`` and is
    not a plain number for an option, so ``--sizes -1M`` would end in "expected one argument"
    instead of the size parser's own message."""
    out: list[str] = []
    for tok in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and \
                re.match(r"-\d", tok) and not re.fullmatch(r"-\d+(\.\d+)?", tok):
            out[-1] = f"{out[-1]}={tok}"
        else:
            out.append(tok)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(_negative_values(sys.argv[1:] if argv is None else argv))
    cmd = getattr(commands, f"cmd_{args.cmd}", None)
    try:
        if cmd is None:
            return int(commands.family_command(args.cmd).run(args) or 0)
        return int(cmd(args) or 0)
    except KeyboardInterrupt:
        print("warplab: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug or not is_user_error(exc):
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, DeviceOutOfMemoryError):
            msg = f"not enough GPU memory: {msg}"
        elif isinstance(exc, MemoryError):
            msg = f"not enough host memory: {msg}"
        print(f"warplab: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
