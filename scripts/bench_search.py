"""Search latency on a large local store: a synthetic 100k-entity store (and the arnold subset when given).

    python -m scripts.bench_search [--entities 100000] [--kgtk ../shared/wikidata/arnold]
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

from agent.kb.local import LocalKB

WORDS = ("river", "saint", "john", "mount", "church", "battle", "album", "house", "north", "valley", "paris",
         "school", "library", "song", "film", "station", "lake", "island", "castle", "bridge", "park", "street")


def synthetic(path: Path, count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    labels = []
    with path.open("w") as out:
        for number in range(1, count + 1):
            label = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) + f" {number}"
            labels.append(label)
            out.write(f'<http://www.wikidata.org/entity/Q{number}> <http://www.w3.org/2000/01/rdf-schema#label> '
                      f'"{label}"@en .\n')
            out.write(f'<http://www.wikidata.org/entity/Q{number}> <http://wikiba.se/ontology#sitelinks> '
                      f'"{rng.randint(0, 300)}"^^<http://www.w3.org/2001/XMLSchema#integer> .\n')
    return labels


def measure(kb: LocalKB, queries: list[str]) -> list[float]:
    times = []
    for query in queries:
        started = time.perf_counter()
        kb.search(query)
        times.append(1000 * (time.perf_counter() - started))
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entities", type=int, default=100_000)
    parser.add_argument("--kgtk", type=Path, help="a directory of KGTK files to load as a second store")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        source = Path(directory) / "synthetic.nt"
        labels = synthetic(source, args.entities)
        kb = LocalKB(Path(directory) / "store")
        started = time.perf_counter()
        kb.load([source], progress=False)
        build = time.perf_counter() - started
        rng = random.Random(1)
        queries = [rng.choice(labels) for _ in range(100)] + [rng.choice(WORDS) for _ in range(100)] + \
            [rng.choice(labels)[:5] for _ in range(100)]
        rows.append((f"synthetic {args.entities}", build, measure(kb, queries)))
        if args.kgtk:
            kgtk = LocalKB(Path(directory) / "kgtk")
            started = time.perf_counter()
            kgtk.load(sorted(args.kgtk.glob("*.tsv.gz")), progress=False)
            rows.append((f"kgtk {args.kgtk.name}", time.perf_counter() - started,
                         measure(kgtk, ["Arnold Schwarzenegger", "actor", "Terminator", "governor", "Austria"] * 20)))
    print(f"{'store':<22} {'load s':>8} {'searches':>9} {'median ms':>10} {'p95 ms':>8} {'max ms':>8}")
    for name, build, times in rows:
        ordered = sorted(times)
        print(f"{name:<22} {build:8.1f} {len(times):>9} {statistics.median(times):10.2f} "
              f"{ordered[int(0.95 * len(ordered)) - 1]:8.2f} {ordered[-1]:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
