"""Compress a results folder's large JSON files with gzip (benchmarks/results/README.md).

``python3 scripts/compact_results.py benchmarks/results [--over 200000]``: every ``*.json``
file larger than ``--over`` bytes becomes ``NAME.json.gz`` (checked to decompress to the same
text before the original is removed); prints one line per file. ``warplab report`` and
``warplab.lab.harness.results.read`` read both forms.
"""
from __future__ import annotations

import argparse
import gzip
from pathlib import Path


def compact(folder: Path, over: int) -> list[tuple[Path, int, int]]:
    """Compress the large JSON files of ``folder``; (new path, old size, new size) each."""
    done = []
    for p in sorted(folder.glob("*.json")):
        size = p.stat().st_size
        if size <= over:
            continue
        data = p.read_bytes()
        gz = p.with_name(p.name + ".gz")
        gz.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        if gzip.decompress(gz.read_bytes()) != data:
            gz.unlink()
            raise SystemExit(f"{gz}: does not decompress to {p}; nothing removed")
        p.unlink()
        done.append((gz, size, gz.stat().st_size))
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--over", type=int, default=200_000, help="bytes (default 200000)")
    args = ap.parse_args()
    for gz, old, new in compact(args.folder, args.over):
        print(f"{gz}: {old / 1e6:.2f} MB -> {new / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
