"""The ``warplab`` command (also ``python -m warplab``).

``warplab histogram FILE...`` counts the bytes of files with the library alone and prints the
most frequent bins at once. Every other subcommand (``device``, ``bench``, ``report``,
``compare``, the timing options of ``histogram`` and the families' measuring commands) belongs
to the measurement lab (:mod:`warplab.lab.cli`), which needs the ``lab`` extra; without it
they print one line saying what to install and exit with status 2.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, TextIO

import numpy as np

from warplab.core.errors import InvalidValueError

LAB_HINT = "pip install 'warplab[lab]'"
_BINS = ("bytes", "ascii128", "letters")


class _CountParser(argparse.ArgumentParser):
    """The plain ``histogram FILE...`` form; any other form goes to the lab."""

    def error(self, message: str) -> NoReturn:
        raise _NotPlain(message)


class _NotPlain(Exception):
    """The arguments are not the plain counting form."""


def _count_parser() -> argparse.ArgumentParser:
    p = _CountParser(prog="warplab", add_help=False)
    p.add_argument("--device", choices=["cuda", "cpu", "gpu"], default=None)
    p.add_argument("--debug", action="store_true")
    p.add_argument("cmd", choices=["histogram"])
    p.add_argument("files", nargs="+")
    p.add_argument("--bins", choices=_BINS, default="bytes")
    p.add_argument("--top", type=int, default=16)
    p.add_argument("--variant", default=None)
    return p


def _plain_args(argv: Sequence[str]) -> argparse.Namespace | None:
    """The namespace of a plain ``histogram FILE...`` call, else None."""
    if "-h" in argv or "--help" in argv:
        return None
    try:
        args = _count_parser().parse_args(list(argv))
    except _NotPlain:
        return None
    if args.variant is not None and ("," in args.variant or args.variant.strip() == "all"):
        return None  # several variants: the timing lab
    if any(f.startswith("-") and f != "-" for f in args.files):
        return None
    return args


def bin_label(i: int, bins: str) -> str:
    """A bin's label as the histogram tables print it."""
    if bins == "letters":
        return "other" if i == 0 else f"{chr(64 + i)}/{chr(96 + i)}"
    code = i + 1 if bins == "ascii128" else i
    ch = chr(code) if 32 < code < 127 else {32: "' '", 10: "\\n", 9: "\\t"}.get(code, "")
    return f"{code:3d} {ch}"


def bins_rows(counts: np.ndarray, bins: str, top: int) -> list[tuple[str, str, str, str]]:
    """(bin, label, count, %) of the most frequent non-empty bins (``top`` of them; 0: all),
    most frequent first, ties in bin order."""
    counts = np.asarray(counts.get() if hasattr(counts, "get") else counts)
    total = int(counts.sum())
    order = np.argsort(-counts, kind="stable")
    order = order[counts[order] > 0]
    if top:
        order = order[:top]
    return [(str(int(i)), bin_label(int(i), bins), str(int(counts[i])),
             f"{100 * counts[i] / total:.3f}" if total else "-") for i in order]


def box_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table with a heavy header box, right-justified cells (the lab's table style)."""
    widths = [max([len(h)] + [len(r[j]) for r in rows]) for j, h in enumerate(header)]

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * (w + 2) for w in widths) + right

    def cells(sep: str, values: Sequence[str]) -> str:
        return sep + sep.join(f" {v:>{w}} " for v, w in zip(values, widths)) + sep

    out = [line("┏", "━", "┳", "┓"), cells("┃", header), line("┡", "━", "╇", "┩")]
    out += [cells("│", r) for r in rows]
    out.append(line("└", "─", "┴", "┘"))
    return "\n".join(out)


def count_files(files: Sequence[str], bins: str = "bytes", top: int = 16,
                variant: str | None = None, device: str | None = None,
                stream: TextIO | None = None) -> int:
    """``warplab histogram FILE...``: the byte histogram of each file (``-``: standard input)
    with :func:`warplab.byte_histogram`, printed as a table of the ``top`` most frequent bins.

    Raises:
        ValueError: a negative ``top``.  OSError: a file that cannot be read.
    """
    from warplab.core.registry import record_variants
    from warplab.families.histogram import byte_histogram
    from warplab.families.histogram.spec import resolve

    if top < 0:
        raise InvalidValueError(f"--top must be 0 (all bins) or more, got {top}")
    out = sys.stdout if stream is None else stream
    nbins = resolve(bins).nbins
    for f in files:
        data: object = np.frombuffer(sys.stdin.buffer.read(), np.uint8) if f == "-" else Path(f)
        with record_variants() as ran:
            counts = byte_histogram(data, bins, variant=variant, device=device)
        how = f", {ran[-1].variant} ({ran[-1].backend})" if ran else ""
        print(f"{f}: {int(np.asarray(counts).sum())} bytes, bins {bins} ({nbins}){how}",
              file=out)
        print(box_table(("bin", "label", "count", "%"), bins_rows(counts, bins, top)), file=out)
    return 0


def _lab_main(argv: Sequence[str]) -> int:
    try:
        from warplab.lab import cli as lab_cli
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing not in ("rich", "matplotlib"):
            raise
        cmd = next((a for a in argv if not a.startswith("-")), None)
        what = f"warplab {cmd}" if cmd else "this command"
        print(f"warplab: error: {what} is part of the measurement lab, which needs {missing}: "
              f"{LAB_HINT}", file=sys.stderr)
        return 2
    return lab_cli.main(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``warplab`` entry point; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-V"]):
        from warplab import __version__

        print(f"warplab {__version__}")
        raise SystemExit(0)  # as argparse's version action
    plain = _plain_args(args)
    if plain is None:
        return _lab_main(args)
    from warplab.core.errors import DeviceOutOfMemoryError, DeviceUnavailableError, UsageError

    try:
        return count_files(plain.files, plain.bins, plain.top, plain.variant, plain.device)
    except KeyboardInterrupt:
        print("warplab: interrupted", file=sys.stderr)
        return 130
    except (UsageError, DeviceUnavailableError, DeviceOutOfMemoryError, OSError,
            MemoryError) as exc:
        if plain.debug:
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"warplab: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
