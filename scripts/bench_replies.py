"""Measure the bot's replies on real runs: replay the upstream QALD-10 runs and render each as a reply.

    python -m scripts.bench_replies ../shared/reference-outputs/qald10_spinach_traces_test.log

Prints a table of reply sizes in characters (median, 90th percentile,
largest), how many replies carry a query (in the ``{{SPARQL}}`` template or
entity-encoded), and how long rendering takes.  Nothing is sent to any model,
knowledge base or wiki.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from bot.render import render_reply
from harness.replay import replay


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="the upstream run log (JSON list)")
    parser.add_argument("--max-chars", type=int, default=20000, help="the reply size cap (default: 20000)")
    args = parser.parse_args(argv)
    try:
        runs = json.loads(args.runs.read_text())
    except (OSError, ValueError) as error:
        print(f"error: cannot read {args.runs}: {error}", file=sys.stderr)
        return 2
    sizes: list[int] = []
    seconds: list[float] = []
    in_template = encoded = without_query = capped = 0
    for run in runs:
        result = replay(run).result
        started = time.perf_counter()
        reply = render_reply(result, max_chars=args.max_chars)
        seconds.append(time.perf_counter() - started)
        sizes.append(len(reply))
        if "{{SPARQL|query=" in reply:
            in_template += 1
        elif "spinach-query" in reply:
            encoded += 1
        else:
            without_query += 1
        capped += "earlier steps left out" in reply or "mw-collapsible" not in reply
    print(f"{len(runs)} replayed runs rendered as replies (cap {args.max_chars:,} characters)\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| median reply size | {statistics.median(sizes):,.0f} characters |")
    print(f"| 90th percentile | {_percentile(sizes, 0.9):,} characters |")
    print(f"| largest reply | {max(sizes):,} characters |")
    print(f"| smallest reply | {min(sizes):,} characters |")
    print(f"| query in {{{{SPARQL}}}} | {in_template} |")
    print(f"| query entity-encoded | {encoded} |")
    print(f"| no query (nothing found) | {without_query} |")
    print(f"| steps left out to fit | {capped} |")
    print(f"| render time, median | {statistics.median(seconds) * 1000:.1f} ms |")
    print(f"| render time, largest | {max(seconds) * 1000:.1f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
