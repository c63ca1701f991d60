"""Convert SugarCrepe's published GPT-4V answers (its repository's `gpt-4v-results` folder) into
lexsem's recorded-answers format, to be scored by `lexsem score-answers --prompt sc_gpt4v`
(`lexsem.benchmarks.sugarcrepe_gpt4v`; docs/generative.md, "Published answers").

    python scripts/sugarcrepe_gpt4v_answers.py FOLDER OUT.jsonl [--data-dir DIR] [--subset S]

Each record is matched to the public SugarCrepe item by its subset and key (captions and file
name checked); a record about an item the public files lack is kept and said here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the gpt-4v-results folder")
    parser.add_argument("out", type=Path, help="the answers file to write (JSONL)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="offline folder holding sugarcrepe/<subset>.json")  # fmt: skip
    parser.add_argument("--subset", default=None, help="one subset only (e.g. swap_obj)")
    args = parser.parse_args(argv)

    from lexsem.benchmarks.load import load_benchmark
    from lexsem.benchmarks.sugarcrepe_gpt4v import write_gpt4v_answers
    from lexsem.errors import LexsemError

    selector = "sugarcrepe" + (f"/{args.subset}" if args.subset else "")
    try:
        bench = load_benchmark(selector, data_dir=args.data_dir)
        stats = write_gpt4v_answers(args.folder, bench.items, args.out)
    except LexsemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for (ordering, subset), n in stats.answers.items():
        print(f"{ordering} {subset}: {n} answers")
    for ordering, subset, key in stats.unmatched:
        print(f"{ordering} {subset}: the answer about item {key} is about no public item (kept)")
    for path, key in stats.not_records:
        print(f"{path}: entry {key!r} is no answer record (left out)")
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
