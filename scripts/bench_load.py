"""Load speed and peak memory: the store's loader beside Oxigraph's own bulk loader, on the same triples.

    python -m scripts.bench_load FILE...                 # .nt/.ttl as they are; JSON/KGTK against their N-Triples
    python -m scripts.bench_load --synthetic 200000      # Wikidata-shaped JSON entities, generated in a temp dir

Each load runs in a fresh process and its peak resident memory is that
process's own (``wait4``), so one measurement never colours the next.  For
JSON and KGTK files the bulk loader gets the same triples as N-Triples (our
mapping, written once beforehand), since it reads RDF only.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyoxigraph as ox

from agent.kb.local.loaders import RDF_FORMATS, file_kind, read_batches

WORDS = ("river", "saint", "john", "mount", "church", "battle", "album", "house", "north", "valley", "paris",
         "school", "library", "song", "film", "station", "lake", "island", "castle", "bridge", "park", "street")


def synthetic_entity(number: int, rng: random.Random, count: int) -> dict:
    """A Wikidata-shaped item: terms in three languages, item, time and quantity claims, qualifiers, sitelinks."""
    def item(pid: str, target: int, rank: str = "normal", qualifiers: dict | None = None) -> dict:
        return {"mainsnak": {"snaktype": "value", "property": pid, "datatype": "wikibase-item",
                             "datavalue": {"type": "wikibase-entityid", "value": {"id": f"Q{target}"}}},
                "rank": rank, "qualifiers": qualifiers or {}, "id": f"Q{number}${pid}-{target}-{rng.random()}"}

    def time_snak(pid: str, year: int) -> dict:
        return {"snaktype": "value", "property": pid, "datatype": "time",
                "datavalue": {"type": "time", "value": {"time": f"+{year}-01-01T00:00:00Z", "precision": 9,
                                                        "timezone": 0, "before": 0, "after": 0,
                                                        "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}}}
    label = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) + f" {number}"
    claims = {
        "P31": [item("P31", rng.randint(1, 1000))],
        "P279": [item("P279", rng.randint(1, max(1, number - 1)))],
        "P17": [item("P17", rng.randint(1, 200), "preferred", {"P580": [time_snak("P580", rng.randint(1800, 2020))]}),
                item("P17", rng.randint(1, 200))],
        "P571": [{"mainsnak": time_snak("P571", rng.randint(1000, 2020)), "rank": "normal",
                  "id": f"Q{number}$P571"}],
        "P1082": [{"mainsnak": {"snaktype": "value", "property": "P1082", "datatype": "quantity",
                                "datavalue": {"type": "quantity", "value": {"amount": f"+{rng.randint(1, 10**7)}",
                                                                            "unit": "1"}}},
                   "rank": "normal", "id": f"Q{number}$P1082"}],
        "P1448": [{"mainsnak": {"snaktype": "value", "property": "P1448", "datatype": "monolingualtext",
                                "datavalue": {"type": "monolingualtext", "value": {"text": label, "language": "en"}}},
                   "rank": "normal", "id": f"Q{number}$P1448"}],
    }
    for extra in range(rng.randint(0, 6)):
        claims.setdefault("P361", []).append(item("P361", rng.randint(1, count)))
    return {"type": "item", "id": f"Q{number}",
            "labels": {lang: {"language": lang, "value": label} for lang in ("en", "fr", "de")},
            "descriptions": {"en": {"language": "en", "value": f"a {rng.choice(WORDS)} in the synthetic set"}},
            "aliases": {"en": [{"language": "en", "value": f"{rng.choice(WORDS)} {number}"}]},
            "claims": claims,
            "sitelinks": {f"{lang}wiki": {"site": f"{lang}wiki", "title": label, "badges": []}
                          for lang in ("en", "fr")[:rng.randint(0, 2)]}}


def write_synthetic(path: Path, count: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as out:
        for number in range(1, count + 1):
            out.write(json.dumps(synthetic_entity(number, rng, count)) + "\n")


def ntriples_twin(path: Path, directory: Path) -> tuple[Path, int]:
    """The triples our mapping makes of a JSON or KGTK file, as N-Triples (the bulk loader's input)."""
    twin = directory / (path.name.split(".")[0] + ".twin.nt")
    count = 0
    with twin.open("w", encoding="utf-8") as out:
        for batch in read_batches(path):
            out.write("".join(batch.lines))
            count += batch.triples
    return twin, count


def _child(loader: str, path: str, store: str) -> None:
    """Run one load in this (fresh) process and print its seconds and triple count."""
    started = time.perf_counter()
    if loader == "ours":
        from agent.kb.local import LocalKB
        count = LocalKB(store).load([path], progress=False)
    else:
        ox.Store(store).bulk_load(path=path, format=RDF_FORMATS[file_kind(Path(path))], lenient=True)
        count = -1
    print(json.dumps({"seconds": time.perf_counter() - started, "triples": count}))


def measure(loader: str, path: Path, store: Path) -> tuple[float, int, float]:
    """(seconds, triples, peak RSS in MiB) of one load in a fresh process."""
    process = subprocess.Popen([sys.executable, "-m", "scripts.bench_load", "--child", loader, str(path), str(store)],
                               stdout=subprocess.PIPE, text=True)
    output = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"the {loader} load of {path} failed (exit {process.returncode})")
    result = json.loads(output.strip().splitlines()[-1])
    return result["seconds"], result["triples"], usage.ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, help="files to load (.nt, .ttl, .json, .ndjson, .tsv; .gz/.bz2)")
    parser.add_argument("--synthetic", type=int, metavar="ENTITIES", help="generate this many Wikidata-shaped items")
    parser.add_argument("--workdir", type=Path, help="where stores and generated files go (default: a temp dir)")
    parser.add_argument("--child", nargs=3, metavar=("LOADER", "FILE", "STORE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(*args.child)
        return 0
    if not args.files and not args.synthetic:
        parser.error("give files to load or --synthetic ENTITIES")
    with tempfile.TemporaryDirectory(dir=args.workdir) as scratch:
        directory = Path(scratch)
        files = list(args.files)
        if args.synthetic:
            files.append(directory / f"synthetic-{args.synthetic}.ndjson.gz")
            write_synthetic(files[-1], args.synthetic)
        print(f"{'file':<34} {'loader':<26} {'triples':>11} {'seconds':>9} {'triples/s':>10} {'peak MiB':>9}")
        for path in files:
            rows = []
            ours = measure("ours", path, directory / f"ours-{path.name}")
            if file_kind(path) in RDF_FORMATS:
                twin, count = path, ours[1]
            else:
                twin, count = ntriples_twin(path, directory)
            bulk = measure("bulk", twin, directory / f"bulk-{path.name}")
            rows.append(("spinach LocalKB.load", ours[0], ours[2]))
            rows.append(("oxigraph bulk_load" + ("" if twin == path else " (.nt)"), bulk[0], bulk[2]))
            for name, seconds, peak in rows:
                print(f"{path.name[:34]:<34} {name:<26} {count:>11,} {seconds:>9.1f} {count / seconds:>10,.0f} "
                      f"{peak:>9,.0f}")
            print(f"{'':<34} {'ours / bulk':<26} {'':>11} {'':>9} {bulk[0] / ours[0]:>9.0%} "
                  f"{ours[2] / bulk[2]:>8.2f}x")
            twin.unlink() if twin != path else None
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
