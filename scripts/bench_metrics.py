"""Time the row-major F1 on large results: the fast path against one dense assignment.

    python -m scripts.bench_metrics [--sizes 1000 5000 20000] [--dense-limit 5000]

Results look like real query-service answers: an item, its label (ignored in
gold), its class (the same in every row) and a date per row; the prediction keeps most gold rows, changes one
value in some, and adds unrelated ones.  The dense version builds the full
n x m recall matrix and solves it with scipy's linear_sum_assignment; past
--dense-limit rows it is not run (a 20k x 20k float matrix alone is 3.2 GB).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

import numpy as np
from scipy.optimize import linear_sum_assignment

from harness.metrics import gold_rows, predicted_rows, row_major_f1


def make_results(size: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    rng = random.Random(seed)

    def row(i: int, year: int) -> dict:
        return {"item": {"type": "uri", "value": f"http://www.wikidata.org/entity/Q{i}"},
                "itemLabel": {"type": "literal", "value": f"item {i}", "xml:lang": "en"},
                # One value every row shares (as "?human wdt:P31 wd:Q5" gives): it links all rows into one block.
                "class": {"type": "uri", "value": "http://www.wikidata.org/entity/Q5"},
                "date": {"type": "literal", "value": f"{year}-01-01T00:00:00Z",
                         "datatype": "http://www.w3.org/2001/XMLSchema#dateTime"}}

    gold = [row(i, 1900 + i % 120) for i in range(1, size + 1)]
    predicted = []
    for i in range(1, size + 1):
        draw = rng.random()
        if draw < 0.85:
            predicted.append(row(i, 1900 + i % 120))
        elif draw < 0.95:
            predicted.append(row(i, 1800 + i % 120))  # the date is wrong: a partial match
    predicted += [row(size + i, 1950) for i in range(1, size // 20 + 1)]
    rng.shuffle(predicted)
    return predicted, gold


def dense_f1(predicted: list[dict], gold: list[dict]) -> float:
    """Straightforward: the full recall matrix, one assignment, the same tie rule as harness.metrics."""
    g, p = gold_rows(gold), predicted_rows(predicted)
    base = min(len(g), len(p)) + 1
    size = len(g[0])
    counts = [Counter(row) for row in p]
    weights = np.zeros((len(g), len(p)))
    for i, row in enumerate(g):
        gold_counts = Counter(row)
        for j, predicted_counts in enumerate(counts):
            shared = sum((gold_counts & predicted_counts).values())
            if shared:
                weights[i, j] = shared * base - 1
    rows, columns = linear_sum_assignment(weights, maximize=True)
    chosen = weights[rows, columns]
    matched = int((chosen > 0).sum())
    tp = float(((chosen[chosen > 0] + 1) / base).sum()) / size
    fn, fp = len(g) - matched + (matched - tp), len(p) - matched
    return 2 * tp / (2 * tp + fp + fn)


def timed(function, *args) -> tuple[float, float]:
    started = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 20000], help="gold rows per case")
    parser.add_argument("--dense-limit", type=int, default=5000, help="largest size the dense version runs on")
    args = parser.parse_args(argv)
    print(f"{'gold rows':>9} {'pred rows':>9} {'F1':>8} {'fast s':>8} {'dense s':>8} {'speed-up':>9}")
    for size in args.sizes:
        predicted, gold = make_results(size)
        fast, fast_seconds = timed(row_major_f1, gold, predicted)
        if size <= args.dense_limit:
            dense, dense_seconds = timed(dense_f1, predicted, gold)
            assert abs(dense - fast) < 1e-9, (dense, fast)
            dense_text, ratio = f"{dense_seconds:8.2f}", f"{dense_seconds / fast_seconds:8.0f}x"
        else:
            dense_text, ratio = f"{'not run':>8}", f"{'-':>9}"
        print(f"{len(gold):>9} {len(predicted):>9} {fast:8.4f} {fast_seconds:8.3f} {dense_text} {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
