"""Sequence paths on the real Arnold P31/P279 subset: as written, as the store rewrites them, and split by hand.

    python -m scripts.bench_paths [--arnold ../shared/wikidata/arnold] [--repeat 3]

``?x wdt:P31/wdt:P279* wd:C`` as Oxigraph evaluates it written that way
(from ``?x``), as the store runs it (:func:`agent.kb.local.sparql.rewrite`,
from the constant end) and split in two (``?c wdt:P279* wd:C . ?x wdt:P31
?c``); the median of *repeat* runs on the on-disk store, with row counts
to show the three agree.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agent.kb.local import LocalKB
from agent.kb.local.sparql import PREFIXES, rewrite

CLASSES = (("Q515", "city"), ("Q5", "human"), ("Q11424", "film"), ("Q6256", "country"),
           ("Q486972", "human settlement"), ("Q43229", "organization"))


def timed(kb: LocalKB, query: str, repeat: int) -> tuple[float, int]:
    """(median milliseconds, rows) of *query* run directly on the store."""
    times, rows = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        rows = sum(1 for _ in kb.store.query(query, prefixes=PREFIXES))
        times.append(1000 * (time.perf_counter() - started))
    return statistics.median(times), rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arnold", type=Path, default=Path("../shared/wikidata/arnold"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        kb = LocalKB(directory, timeout=600)
        kb.load([args.arnold / "derived.P31.tsv.gz", args.arnold / "derived.P279.tsv.gz"], progress=False)
        print(f"{'class':<27} {'rows':>6} {'as written ms':>14} {'rewritten ms':>13} {'split ms':>9} "
              f"{'rewritten/split':>16}")
        for qid, name in CLASSES:
            written = f"SELECT ?x WHERE {{ ?x wdt:P31/wdt:P279* wd:{qid} }}"
            split = f"SELECT ?x WHERE {{ ?c wdt:P279* wd:{qid} . ?x wdt:P31 ?c }}"
            (as_written, rows), (rewritten, same), (by_hand, split_rows) = (
                timed(kb, written, args.repeat), timed(kb, rewrite(written), args.repeat),
                timed(kb, split, args.repeat))
            if not rows == same == split_rows:
                raise SystemExit(f"{qid}: the forms disagree ({rows}, {same}, {split_rows} rows)")
            print(f"{name + ' (' + qid + ')':<27} {rows:>6} {as_written:>14.1f} {rewritten:>13.1f} {by_hand:>9.1f} "
                  f"{rewritten / by_hand:>15.1f}x")
        kb.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
