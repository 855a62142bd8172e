"""Measure the bot's replies on real runs: replay the upstream QALD-10 runs and render each as a reply.

    python -m scripts.bench_replies ../shared/reference-outputs/qald10_spinach_traces_test.log

Prints a table of what a regular reading the page's source meets, the final
query's block left out (it is the query as the model wrote it): the share of
characters spelt as HTML entities, the longest line (of all replies, and the
median of each reply's longest), and the reply's size (median, 90th
percentile, largest); then how many replies carry a query (in the
``{{SPARQL}}`` template or in a text block), and how long rendering takes.
The goals of a reply a regular would write are printed beside the first
three.  Nothing is sent to any model, knowledge base or wiki; the replayed
runs fix the model's decisions, so these figures measure the renderer only.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from bot.render import final_query_wikitext, render_reply
from harness.replay import replay

ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
#: What a reply a regular would write stays within.
GOALS = {"entities": 0.02, "line": 600, "median": 2000}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def without_query(reply: str, sparql: str | None) -> str:
    """The reply with its final query's block taken out."""
    if not sparql:
        return reply
    return reply.replace(final_query_wikitext(sparql), "", 1)


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
    longest: list[int] = []
    seconds: list[float] = []
    entity_chars = total_chars = 0
    in_template = in_block = without_answer = capped = 0
    for number, run in enumerate(runs, 1):
        result = replay(run).result
        started = time.perf_counter()
        reply = render_reply(result, max_chars=args.max_chars)
        seconds.append(time.perf_counter() - started)
        text = without_query(reply, result.final_sparql) if "Try it" in reply or "{{SPARQL" in reply else reply
        sizes.append(len(text))
        longest.append(max(len(line) for line in text.splitlines()))
        entity_chars += sum(len(match) for match in ENTITY.findall(text))
        total_chars += len(text)
        if "{{SPARQL|query=" in reply:
            in_template += 1
        elif "query.wikidata.org" in reply:
            in_block += 1
        else:
            without_answer += 1
        capped += "earlier steps left out" in reply or "mw-collapsible" not in reply
        if number % 50 == 0:
            print(f"{number}/{len(runs)} runs rendered", file=sys.stderr)
    share = entity_chars / max(total_chars, 1)
    print(f"{len(runs)} replayed runs rendered as replies (cap {args.max_chars:,} characters), "
          "the final query's block left out\n")
    print("| measure | value | goal |")
    print("|---|---:|---:|")
    print(f"| characters spelt as entities | {share:.2%} | at most {GOALS['entities']:.0%} |")
    print(f"| longest line | {max(longest):,} characters | at most {GOALS['line']:,} |")
    print(f"| longest line of a reply, median | {statistics.median(longest):,.0f} characters | |")
    print(f"| median reply size | {statistics.median(sizes):,.0f} characters | at most {GOALS['median']:,} |")
    print(f"| 90th percentile | {_percentile(sizes, 0.9):,} characters | |")
    print(f"| largest reply | {max(sizes):,} characters | |")
    print(f"| smallest reply | {min(sizes):,} characters | |")
    print(f"| query in {{{{SPARQL}}}} | {in_template} | |")
    print(f"| query in a text block | {in_block} | |")
    print(f"| no query (nothing found) | {without_answer} | |")
    print(f"| steps left out to fit | {capped} | |")
    print(f"| render time, median | {statistics.median(seconds) * 1000:.1f} ms | |")
    print(f"| render time, largest | {max(seconds) * 1000:.1f} ms | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
