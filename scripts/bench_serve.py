"""How ``spinach-serve`` meets its users: the first step and the answer, many people at once, and people who leave.

    python -m scripts.bench_serve                         # its own server and stand-in model (from a checkout)
    python -m scripts.bench_serve --model-delay 1 --users 10 50 --repeat 5 --leaving 2
    python -m scripts.bench_serve http://127.0.0.1:8000 --graph wikidata --question "Who advised Euler?"

With no address, the bench starts what it measures, on this machine alone:
a stand-in OpenAI-compatible model on loopback that answers each call after
``--model-delay`` seconds with a short trajectory (a search, a query, then
``stop``: three calls a question), and ``spinach-serve`` as its operators
start it (``python -m serve``, a real uvicorn process) on the tests' library
catalogue in a local store, so nothing goes over the network.  Both come
from the tests' stand-ins (``tests/support``), so this needs a checkout of
the project with the test extra installed; without them it says so in one
line.  Given an address, it measures that server with whatever model and
graph it was started with (the third table needs the bench's own server).

Each question goes in as the chat page sends it (``POST /chat/runs``) and
its events are read as the page reads them (server-sent events).  A question
is timed from the POST to ``started`` (a worker took it), to its first
``step`` and to its ``end``.  The tables:

1. one question at a time (``--repeat``): first step and answer;
2. ``--users`` people asking at once, each from its own loopback address
   (127.0.0.k) and all from one address: how many were answered, refused
   (by the status the server sent, whatever it is) or failed or lost (a
   failed run, a broken connection), and the times of those answered;
3. ``--leaving`` people who ask and leave after their first step, each
   holding a worker: the model calls their runs still made, the model
   seconds not spent (the delay times the calls a full run makes that these
   did not), and how soon a question sent right after they left got a worker
   and its answer.  A leaving run's call under way when its asker left is
   answered once the server has noticed the leaving (its log says so), then
   after the delay: a real model's call takes seconds, which a small delay
   on a busy machine would not.

What the figures can show: the server's own overhead, queueing and refusals
around a model of known speed.  What they cannot: a real model's speed,
which the delay stands in for.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The bench's question; each run adds its own tag, by which the stand-in tells the runs apart.
QUESTION = "Which books are in the library catalogue?"
#: The query the stand-in's second call runs: rows on the library graph (the agent stops only on a query with rows).
QUERY = "SELECT ?book ?name WHERE { ?book a <http://schema.org/Book> ; <http://schema.org/name> ?name }"
#: Seconds a leaving client waits for the server to say it noticed the leaving, and for the run's end.
NOTICE_SECONDS = 60.0


@dataclass
class Timing:
    """One question: what the POST answered, and seconds to a worker, to its first step and to its end (``None``:
    never).  *left* is the clock when a client that leaves closed its connection."""

    status: int
    outcome: str
    question: str = ""
    run: str = ""
    started: float | None = None
    first_step: float | None = None
    end: float | None = None
    left: float | None = None


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ask(url: str, graph: str, question: str, source: str = "", timeout: float = 120,
        leave: bool = False) -> Timing:
    """Send *question* as the chat page does, from the loopback address *source* ("" for any), and time it; with
    *leave*, close the connection once the first step came, as a reader who closes the page.  A connection that
    fails is counted (status 0 before the POST's answer), never raised: one lost question must not end the bench."""
    try:
        return _ask(url, graph, question, source, timeout, leave)
    except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
        progress(f"warning: {question!r}: {type(error).__name__}: {error}")
        return Timing(0, "connection failed", question)


def _ask(url: str, graph: str, question: str, source: str, timeout: float, leave: bool) -> Timing:
    parts = urllib.parse.urlsplit(url)

    def connect() -> http.client.HTTPConnection:
        return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout,
                                          source_address=(source, 0) if source else None)

    started = time.monotonic()
    connection = connect()
    try:
        connection.request("POST", "/chat/runs", json.dumps({"question": question, "graph": graph}),
                           {"Content-Type": "application/json"})
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    if response.status != 200:
        return Timing(response.status, "refused", question)
    run = json.loads(raw)["run"]
    stream = connect()
    timing, event = Timing(200, "no end", question, run), ""
    try:
        stream.request("GET", f"/chat/runs/{run}/events", headers={"Accept": "text/event-stream"})
        events = stream.getresponse()
        while line := events.readline():
            text = line.decode("utf-8").rstrip("\r\n")
            if text.startswith("event:"):
                event = text[6:].strip()
                continue
            if text or not event:
                continue
            elapsed = time.monotonic() - started
            if event == "started" and timing.started is None:
                timing.started = elapsed
            elif event == "step" and timing.first_step is None:
                timing.first_step = elapsed
                if leave:
                    stream.sock.shutdown(socket.SHUT_RDWR)  # the page goes away: nothing more is read
                    timing.outcome, timing.left = "left", time.monotonic()
                    break
            elif event in ("final", "failed"):
                timing.outcome = "answered" if event == "final" else "failed"
            elif event == "end":
                timing.end = elapsed
                break
            event = ""
    finally:
        stream.close()
    return timing


def quantile(values: list[float], fraction: float) -> float:
    """The *fraction* quantile of *values* (the median at 0.5), read between the two nearest values."""
    ordered = sorted(values)
    at = fraction * (len(ordered) - 1)
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def seconds(values: list[float | None], fractions: tuple[float, ...]) -> str:
    """*values* at *fractions* (1.0 the max), "a / b / c"; "–" when none was seen."""
    seen = [value for value in values if value is not None]
    if not seen:
        return "–"
    return " / ".join(f"{quantile(seen, fraction):.2f}" for fraction in fractions)


def refusals(timings: list[Timing]) -> str:
    """The refused questions by status, as the server answered them ("–" for none)."""
    counted = Counter(timing.status for timing in timings if timing.status not in (0, 200))
    return ", ".join(f"{count} × {status}" for status, count in sorted(counted.items())) or "–"


@dataclass
class Trajectory:
    """The stand-in model's script: a search, a query, then ``stop``, each answered after *delay* seconds.  Every
    call is recorded with its question and the clock; a call of a question in *held* (its second, under way when
    its asker leaves) waits for that question's event first."""

    delay: float
    calls: list[tuple[float, str]] = field(default_factory=list)
    held: dict[str, threading.Event] = field(default_factory=dict)

    def __call__(self, body: dict[str, Any]) -> Any:
        from tests.support.llm_server import HeldReply, SlowReply, ToolCallReply

        found = re.search(r"^Question: (.*)$", body["messages"][1]["content"], re.MULTILINE)
        question = found.group(1) if found else ""
        taken = sum(message["role"] == "tool" for message in body["messages"])
        self.calls.append((time.monotonic(), question))  # the stand-in calls this under its lock
        names = [tool["function"]["name"] for tool in body.get("tools", [])]
        search = next((name for name in names if name.startswith("search")), "search_graph")
        if taken == 0:
            reply = ToolCallReply(search, {"thought": "Find the books.", "query": "Dune"})
        elif taken == 1:
            reply = ToolCallReply("execute_sparql", {"thought": "List the books.", "sparql": QUERY})
        else:
            reply = ToolCallReply("stop", {"thought": "done", "explanation": "The catalogue's books.",
                                           "language": "en"})
        if taken == 1 and question in self.held:
            return HeldReply(SlowReply(self.delay, reply), release=self.held[question], limit=2 * NOTICE_SECONDS)
        return SlowReply(self.delay, reply)

    def count(self, question: str, after: float = 0.0) -> int:
        return sum(asked == question and at > after for at, asked in self.calls)


def at_once(url: str, graph: str, questions: list[str], sources: list[str], timeout: float,
            leave: bool = False) -> list[Timing]:
    with ThreadPoolExecutor(len(questions)) as pool:
        return list(pool.map(lambda pair: ask(url, graph, pair[0], pair[1], timeout, leave), zip(questions, sources)))


def table_alone(url: str, graph: str, question: str, repeat: int, timeout: float) -> list[Timing]:
    progress(f"one question at a time: {repeat} questions…")
    alone = [ask(url, graph, f"{question} (alone {number})", timeout=timeout) for number in range(1, repeat + 1)]
    answered = [timing for timing in alone if timing.outcome == "answered"]
    print("| one at a time | questions | answered | first step s (median / max) | answer s (median / max) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| alone | {len(alone)} | {len(answered)} | {seconds([t.first_step for t in answered], (0.5, 1))} | "
          f"{seconds([t.end for t in answered], (0.5, 1))} |")
    return alone


def table_users(url: str, graph: str, question: str, users: list[int], timeout: float) -> None:
    print()
    print("| users at once | from | answered | refused (status) | failed or lost | answer s (median / p90 / max) | "
          "first step s (median / p90 / max) | to a worker s (median / p90 / max) |")
    print("|---:|---|---:|---|---:|---:|---:|---:|")
    for count in users:
        for spread in (True, False):
            where = "own address each" if spread else "one address"
            progress(f"{count} users at once, {where}…")
            sources = [f"127.0.0.{k}" if spread else "127.0.0.1" for k in range(1, count + 1)]
            questions = [f"{question} ({count} {'spread' if spread else 'one'} {k})" for k in range(1, count + 1)]
            timings = at_once(url, graph, questions, sources, timeout)
            answered = [t for t in timings if t.outcome == "answered"]
            other = sum(t.status in (0, 200) and t.outcome != "answered" for t in timings)
            quantiles = (0.5, 0.9, 1)
            print(f"| {count} | {where} | {len(answered)} | {refusals(timings)} | {other} | "
                  f"{seconds([t.end for t in answered], quantiles)} | "
                  f"{seconds([t.first_step for t in answered], quantiles)} | "
                  f"{seconds([t.started for t in answered], quantiles)} |")


def noticed(log: Callable[[], str], run: str) -> Callable[[], bool]:
    """Whether the server's log says run *run* was cancelled (its asker went away)."""
    return lambda: any(run in line and "cancel" in line for line in log().splitlines())


def ended(log: Callable[[], str], question: str) -> Callable[[], bool]:
    """Whether the server's log says the run of *question* stopped (its worker is free)."""
    return lambda: any(question in line and "stopped" in line for line in log().splitlines())


def table_leaving(url: str, graph: str, question: str, leaving: int, trajectory: Trajectory, log: Callable[[], str],
                  alone: list[Timing], timeout: float) -> list[int]:
    """The third table; the model calls each abandoned run made."""
    from tests.support.processes import wait_for

    progress(f"{leaving} clients leave after their first step, then one more question…")
    questions = [f"{question} (leaving {k})" for k in range(1, leaving + 1)]
    for asked in questions:
        trajectory.held[asked] = threading.Event()
    left = at_once(url, graph, questions, [f"127.0.1.{k}" for k in range(1, leaving + 1)], timeout, leave=True)
    with ThreadPoolExecutor(1) as pool:  # the next question goes in at once, while the server notices the leaving
        following = pool.submit(ask, url, graph, f"{question} (next)", "127.0.2.1", timeout)
        for asked, timing in zip(questions, left):
            if timing.run:
                try:
                    wait_for(noticed(log, timing.run), NOTICE_SECONDS, f"the server noticing {asked!r} left")
                except AssertionError as error:
                    progress(f"warning: {error}")
            trajectory.held[asked].set()
        next_timing = following.result()
    for asked, timing in zip(questions, left):
        if timing.run:
            try:
                wait_for(ended(log, asked), NOTICE_SECONDS, f"the end of {asked!r}'s run")
            except AssertionError as error:
                progress(f"warning: {error}")
    full = [trajectory.count(timing.question) for timing in alone if timing.outcome == "answered"]
    full_calls = round(statistics.median(full)) if full else 0
    made = [trajectory.count(asked) for asked in questions]
    after = [trajectory.count(asked, timing.left or 0.0) for asked, timing in zip(questions, left)]
    saved = sum(max(0, full_calls - calls) for calls in made) * trajectory.delay
    alone_answer = seconds([t.end for t in alone if t.outcome == "answered"], (0.5,))
    print()
    print(f"| {leaving} clients leave after their first step | |")
    print("|---|---:|")
    print(f"| left after their first step | {sum(t.outcome == 'left' for t in left)} of {leaving} |")
    print(f"| model calls of a full run | {full_calls} |")
    print(f"| model calls of each abandoned run | {', '.join(map(str, made))} |")
    print(f"| of them made after the client left | {', '.join(map(str, after))} |")
    print(f"| worker seconds freed (delay × model calls not made) | {saved:.2f} |")
    print(f"| next question: to a worker s | {seconds([next_timing.started], (1,))} |")
    print(f"| next question: first step s | {seconds([next_timing.first_step], (1,))} |")
    print(f"| next question: answer s ({next_timing.outcome}) | {seconds([next_timing.end], (1,))} |")
    print(f"| one question alone: answer s (median) | {alone_answer} |")
    return made


@dataclass
class OwnServer:
    """The bench's own stand-in model and ``spinach-serve``, stopped by :meth:`close`."""

    url: str
    trajectory: Trajectory
    log: Callable[[], str]
    close: Callable[[], None]


def start_own_server(delay: float, workers: int, directory: Path) -> OwnServer:
    """The stand-in model answering after *delay* seconds, and ``spinach-serve`` on the library catalogue."""
    from tests.support.llm_server import FakeLLMServer
    from tests.support.serve_rig import build_library_store, start_serve

    trajectory = Trajectory(delay)
    model = FakeLLMServer(trajectory)
    try:
        store = build_library_store(directory)
        # No watch grace: a leaving run is stopped as soon as its page goes, not half a minute later (the time a
        # reload may take), so the third table measures the stopping itself.
        service = start_serve(model.base_url, {"library": store}, directory,
                              options=("--workers", str(workers), "--watch-grace", "0"))
    except BaseException:
        model.close()
        raise

    def close() -> None:
        service.stop()
        model.close()

    return OwnServer(service.base, trajectory, lambda: service.log.read_text(errors="replace"), close)


def missing_checkout() -> str | None:
    """Why the bench cannot start its own server here (no checkout's ``tests/``, or no test extra), or ``None``."""
    try:
        import tests.support.llm_server  # noqa: F401
        import tests.support.serve_rig  # noqa: F401
    except ImportError as error:
        return (f"the bench starts its own server from the tests' stand-ins, which need a checkout of the project "
                f"and its test extra ({error}); or give the address of a running server")
    return None


def build_parser() -> argparse.ArgumentParser:
    from serve.runs import PoolLimits

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", nargs="?", help="a running server's address, e.g. http://127.0.0.1:8000 (default: "
                                               "start one with a stand-in model)")
    parser.add_argument("--graph", help="the graph to ask, with an address (the bench's own server serves the "
                                        "library catalogue)")
    parser.add_argument("--question", default=QUESTION, help="the question each run asks, tagged per run")
    parser.add_argument("--repeat", type=int, default=3, help="questions asked one at a time (default: 3)")
    parser.add_argument("--users", type=int, nargs="+", default=[10, 50], metavar="N",
                        help="people asking at once, each count from their own addresses and from one "
                             "(default: 10 50; at most 250)")
    parser.add_argument("--leaving", type=int, metavar="N",
                        help="clients that leave after their first step (default: the workers; own server only)")
    parser.add_argument("--model-delay", type=float, default=0.5, metavar="SECONDS",
                        help="seconds the stand-in model takes over each call (default: 0.5)")
    parser.add_argument("--workers", type=int, default=PoolLimits().workers, metavar="N",
                        help=f"the bench's own server's workers (default: {PoolLimits().workers}, the server's)")
    parser.add_argument("--timeout", type=float, default=120, metavar="SECONDS",
                        help="seconds any one read from the server may take (default: 120)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.url and not args.graph:
        print("error: --graph is needed with a server's address (the graph to ask)", file=sys.stderr)
        return 2
    if min(args.users) < 1 or max(args.users) > 250 or args.repeat < 1 or args.workers < 1 or args.timeout <= 0:
        print("error: --users must be 1 to 250, --repeat and --workers at least 1, --timeout above 0",
              file=sys.stderr)
        return 2
    if args.url:
        try:
            with urllib.request.urlopen(args.url.rstrip("/") + "/chat/graphs", timeout=args.timeout) as answer:
                served = [graph["name"] for graph in json.load(answer)]
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"error: {args.url} does not answer as spinach-serve does ({error})", file=sys.stderr)
            return 1
        if args.graph not in served:
            print(f"error: {args.url} serves no graph {args.graph!r} (it serves: {', '.join(served)})",
                  file=sys.stderr)
            return 2
        alone = table_alone(args.url, args.graph, args.question, args.repeat, args.timeout)
        table_users(args.url, args.graph, args.question, args.users, args.timeout)
        return 0 if all(t.outcome == "answered" for t in alone) else 1
    if why := missing_checkout():
        print(f"error: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as directory:
        progress(f"starting a stand-in model ({args.model_delay:g} s a call) and spinach-serve "
                 f"({args.workers} workers) on the library catalogue…")
        try:
            own = start_own_server(args.model_delay, args.workers, Path(directory))
        except RuntimeError as error:
            print(f"error: the bench's server did not start: {str(error).splitlines()[0]}", file=sys.stderr)
            return 1
        try:
            alone = table_alone(own.url, "library", args.question, args.repeat, args.timeout)
            table_users(own.url, "library", args.question, args.users, args.timeout)
            table_leaving(own.url, "library", args.question, args.leaving or args.workers, own.trajectory, own.log,
                          alone, args.timeout)
        finally:
            own.close()
    return 0 if all(t.outcome == "answered" for t in alone) else 1


if __name__ == "__main__":
    sys.exit(main())
