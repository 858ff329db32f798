#!/usr/bin/env python
"""Export the dialeval benchmarks as a Hub dataset folder (Parquet + README with ``configs:``).

    python dataset_scripts/export_benchmarks.py --out DIR [--data-dir D] [--only NAME ...] [--cache-dir C]

Thin wrapper over :func:`dialeval.benchmarks.export.export_all`; ``--only`` takes benchmark names or groups
(fed, usr, rade).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    from dialeval.benchmarks import GROUPS, benchmark_names
    from dialeval.benchmarks.export import export_all

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output folder (the Hub dataset repository root)")
    parser.add_argument("--data-dir", default=None, help="data directory (default: $DIALEVAL_DATA_DIR or ../shared/data)")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help="benchmarks or groups to export (default: all): " + ", ".join(benchmark_names())
                        + "; groups " + ", ".join(GROUPS))
    parser.add_argument("--cache-dir", default=None, help="datasets cache for the built benchmarks")
    args = parser.parse_args(argv)
    shown = ["--out", "<dir>"] + (["--only", *args.only] if args.only else [])
    command = "python dataset_scripts/export_benchmarks.py " + " ".join(shlex.quote(a) for a in shown)
    try:
        result = export_all(args.out, data_dir=args.data_dir, names=args.only, cache_dir=args.cache_dir,
                            command=command)
    except KeyError as err:
        parser.error(str(err.args[0] if err.args else err))
    for name, splits in result.row_counts.items():
        print(f"{name}: " + ", ".join(f"{s}={n}" for s, n in splits.items()))
    print(f"wrote {result.readme} and {sum(len(s) for s in result.files.values())} parquet files under {result.out_dir / 'data'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
