"""The first query right after a load: does it see the loaded data, and how long does it take?

    python -m scripts.bench_first_query FILE...               # 20 loads in a row, each into a fresh store
    python -m scripts.bench_first_query --rounds 5 --same-store FILE...   # each load into the same store

Each round loads FILE... (any format ``python -m agent.kb load`` takes) and
at once runs one query counting the store's triples, in the same process,
as a user who loads and then asks does.  The table gives each round's load
time, the first query's time and status, and whether it counted every
triple; a failure prints its message.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agent.kb.base import QueryStatus
from agent.kb.local import LocalKB

COUNT = "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--same-store", action="store_true", help="load every round into one store")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        expected = None
        kb = None
        for number in range(1, args.rounds + 1):
            if kb is None or not args.same_store:
                if kb is not None:
                    kb.close()
                kb = LocalKB(Path(directory) / f"store{number}", timeout=120)
            started = time.perf_counter()
            kb.load(args.files, progress=False)
            loaded = time.perf_counter() - started
            started = time.perf_counter()
            result = kb.execute(COUNT)
            first = time.perf_counter() - started
            count = int(result.bindings[0]["n"]["value"]) if result.status == QueryStatus.OK else None
            expected = expected or count
            rows.append((number, loaded, first, result.status, count, result.message))
        kb.close()
    print(f"{'round':>5} {'load s':>8} {'first query s':>14} {'status':>8} {'triples seen':>13}")
    for number, loaded, first, status, count, message in rows:
        print(f"{number:>5} {loaded:8.2f} {first:14.2f} {status:>8} {count if count is not None else '-':>13}"
              + (f"  {message}" if status != QueryStatus.OK else ""))
    good = [row for row in rows if row[3] == QueryStatus.OK and row[4] == expected]
    firsts = [row[2] for row in rows]
    print(f"{len(good)} of {len(rows)} first queries saw all {expected} triples; first query median "
          f"{statistics.median(firsts):.2f} s, max {max(firsts):.2f} s")
    return 0 if len(good) == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
