"""How fast a running ``spinach-serve`` shows the first step, and what it does with many questions at once.

    python -m scripts.bench_serve http://127.0.0.1:8000 --graph wikidata --question "Who advised Euler?"
    python -m scripts.bench_serve URL --graph wikidata --question "..." --concurrent 10 --spread

Each question goes in as the chat page sends it (``POST /chat/runs``) and its
events are read as the page reads them (server-sent events); a question is
timed from the POST to its first ``step`` event and to its ``end``.  The
first table is one question at a time (``--repeat`` times); the second,
``--concurrent`` questions sent at once, from one address (the per-client
limit applies) or, with ``--spread``, each from its own loopback address
(127.0.0.k: only the queue and the workers apply).  The model and the graph
are whatever the server was started with: the figures include them.
"""

from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass


@dataclass
class Timing:
    """One question: what the POST answered, and seconds to its first step and to its end (``None``: never)."""

    status: int
    outcome: str
    first_step: float | None = None
    end: float | None = None


def ask(url: str, graph: str, question: str, source: str = "", timeout: float = 600) -> Timing:
    """Send *question* as the chat page does, from the loopback address *source* ("" for any), and time it."""
    parts = urllib.parse.urlsplit(url)

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout,
                                          source_address=(source, 0) if source else None)

    started = time.monotonic()
    connection = connect()
    connection.request("POST", "/chat/runs", json.dumps({"question": question, "graph": graph}),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    body = json.loads(response.read() or b"{}")
    connection.close()
    if response.status != 200:
        return Timing(response.status, f"refused: {response.status}")
    stream = connect()
    stream.request("GET", f"/chat/runs/{body['run']}/events", headers={"Accept": "text/event-stream"})
    events = stream.getresponse()
    timing, event = Timing(200, "no end"), ""
    while line := events.readline():
        text = line.decode("utf-8").rstrip("\r\n")
        if text.startswith("event:"):
            event = text[6:].strip()
        elif not text and event:
            if event == "step" and timing.first_step is None:
                timing.first_step = time.monotonic() - started
            elif event in ("final", "failed"):
                timing.outcome = "answered" if event == "final" else "failed"
            elif event == "end":
                timing.end = time.monotonic() - started
                break
            event = ""
    stream.close()
    return timing


def spread(values: list[float | None]) -> str:
    seen = sorted(value for value in values if value is not None)
    if not seen:
        return "–"
    return f"{seen[0]:.2f} / {statistics.median(seen):.2f} / {seen[-1]:.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the server's address, e.g. http://127.0.0.1:8000")
    parser.add_argument("--graph", default="wikidata", help="the graph to ask (default: wikidata)")
    parser.add_argument("--question", required=True, help="the question each run asks")
    parser.add_argument("--repeat", type=int, default=3, help="questions asked one at a time (default: 3)")
    parser.add_argument("--concurrent", type=int, default=10, help="questions sent at once (default: 10)")
    parser.add_argument("--spread", action="store_true",
                        help="send each concurrent question from its own loopback address (127.0.0.k)")
    args = parser.parse_args(argv)

    alone = [ask(args.url, args.graph, f"{args.question} ({number})") for number in range(1, args.repeat + 1)]
    print("| one at a time | questions | first step s (min / median / max) | end s (min / median / max) |")
    print("|---|---:|---:|---:|")
    print(f"| alone | {len(alone)} | {spread([t.first_step for t in alone])} | {spread([t.end for t in alone])} |")

    started = time.monotonic()
    with ThreadPoolExecutor(args.concurrent) as pool:
        runs = list(pool.map(lambda k: ask(args.url, args.graph, f"{args.question} [{k}]",
                                           f"127.0.0.{k}" if args.spread else ""), range(1, args.concurrent + 1)))
    wall = time.monotonic() - started
    print()
    print(f"| {args.concurrent} at once ({'each from its own address' if args.spread else 'one address'}) "
          "| questions | first step s (min / median / max) | end s (min / median / max) |")
    print("|---|---:|---:|---:|")
    for outcome, count in sorted(Counter(t.outcome for t in runs).items()):
        chosen = [t for t in runs if t.outcome == outcome]
        print(f"| {outcome} | {count} | {spread([t.first_step for t in chosen])} | {spread([t.end for t in chosen])} |")
    print(f"\nall {args.concurrent} done in {wall:.2f} s")
    return 0 if all(t.outcome == "answered" for t in alone) else 1


if __name__ == "__main__":
    sys.exit(main())
