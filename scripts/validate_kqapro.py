"""Check a converted KQA Pro store: run every gold SPARQL of a split and compare its answer with the gold one.

    python -m scripts.validate_kqapro --kb stores/kqapro --data data --split val

Each gold query's single result is read as KQA Pro's engine reads it (a name,
a date, a year, a number with its unit, yes or no) and judged against the
gold answer as KQA Pro's evaluation judges predictions.  The command prints
how many agree and lists those that do not; it exits 0 only when all agree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.datasets import DATASETS, DatasetError, read_dataset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.validate_kqapro", description=__doc__.splitlines()[0])
    parser.add_argument("--kb", required=True, metavar="DIR",
                        help="the store built from kb.json (python -m agent.kb load --graph kqapro ...)")
    parser.add_argument("--data", default="data", metavar="DIR", help="where kqapro/{train,val}.json are")
    parser.add_argument("--split", choices=("train", "val"), default="val", help="which split (default: val)")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N questions")
    parser.add_argument("--show", type=int, default=20, metavar="N", help="disagreements listed (default: 20)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    from agent.kb.local import LocalKB
    from harness.kqapro import validate

    try:
        examples = read_dataset("kqapro", args.split, args.data).examples[: args.limit]
        kb = LocalKB(Path(args.kb), read_only=True)
    except (DatasetError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if kb.graph.name != DATASETS["kqapro"].graph:
        print(f"error: {args.kb} holds the graph {kb.graph.name!r}; build the KQA Pro store with "
              f"`python -m agent.kb load --graph kqapro --store {args.kb} {args.data}/kqapro/kb.json`", file=sys.stderr)
        return 2
    validity = validate(examples, kb, progress=not args.quiet)
    print(f"{args.split}: {validity.agreed:,} of {validity.checked:,} gold queries agree with their gold answer "
          f"({validity.share:.2f}%)" + (": " + ", ".join(f"{count:,} {kind}" for kind, count
                                                          in validity.kinds.most_common()) + " disagree"
                                        if validity.kinds else ""))
    for disagreement in validity.disagreements[: args.show]:
        print(f"  #{disagreement.index}: gold {disagreement.gold!r}, query {disagreement.found!r}"
              f"{'' if disagreement.why == 'another answer' else f' ({disagreement.why})'}: "
              f"{disagreement.question[:100]}")
    if len(validity.disagreements) > args.show:
        print(f"  ... {len(validity.disagreements) - args.show:,} more (--show N lists more)")
    return 0 if validity.checked and validity.agreed == validity.checked else 1


if __name__ == "__main__":
    sys.exit(main())
