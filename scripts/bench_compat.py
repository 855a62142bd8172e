"""How many gold queries of the benchmarks run on a local store without a syntax or unsupported-feature error.

    python -m scripts.bench_compat [--data ../shared/datasets] [--store DIR]

The measure is compatibility with the query service's dialect, not answers:
an empty store is enough (results may be empty; a timeout is not a failure
of the dialect).  Every failure is listed with its reason.
"""

from __future__ import annotations

import argparse
import tempfile

from harness.datasets import load_dataset
from agent.kb.local import LocalKB

SETS = (("spinach", "dev"), ("spinach", "test"), ("qald10", "test"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/datasets", help="dataset directory")
    parser.add_argument("--store", help="a store to run on (default: a new empty one)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per query")
    args = parser.parse_args(argv)
    kb = LocalKB(args.store or tempfile.mkdtemp(prefix="compat-store-"), timeout=args.timeout)
    failures: list[tuple[str, str, str]] = []
    rows = []
    for dataset, split in SETS:
        examples = load_dataset(dataset, split, args.data)
        ran = 0
        for example in examples:
            result = kb.execute(example.gold_sparql)
            if result.status in ("syntax_error", "error"):
                failures.append((f"{dataset} {split}", example.id, result.message.splitlines()[0][:160]))
            else:
                ran += 1
        rows.append((f"{dataset} {split}", ran, len(examples)))
    print(f"{'queries':<16} {'run':>5} {'of':>5} {'share':>7}")
    for name, ran, total in rows:
        print(f"{name:<16} {ran:>5} {total:>5} {100 * ran / total:6.1f}%")
    ran, total = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'all':<16} {ran:>5} {total:>5} {100 * ran / total:6.1f}%")
    print(f"\n{len(failures)} failures:")
    for name, example_id, reason in failures:
        print(f"  {name} {example_id}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
