"""What the service's tests run against: ``spinach-serve`` as a process, Oxigraph's own SPARQL server, the
challenge's official client, and CK25 in a local store.

``spinach-serve`` runs as its operators start it (``python -m serve`` with
``--graph`` and ``--dataset``), its model the scripted stand-in of
:mod:`tests.support.llm_server`.  The official client (``text2sparql-client``,
pinned) is installed by pip into a directory of the test session without its
dependencies, which the test extra holds (see ``setup.cfg``): its
``pytrec-eval`` dependency builds only by downloading ``trec_eval``, and
``pytrec-eval-terrier`` is the same module with wheels.  Every test that runs
the client shares this one installation (``text2sparql_client``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.processes import stop as stop_process

#: The challenge's official client, as its organisers run it.
CLIENT = "text2sparql-client==2.1.0"
CK25_DATASET = "https://text2sparql.aksw.org/2025/corporate/"
#: The challenge's DBpedia dataset, answered by the tests on the DBpedia-style sample graph.
DBPEDIA_DATASET = "https://text2sparql.aksw.org/2025/dbpedia/"
#: CK25's files, each loaded into the named graph its ``.graph`` file names, as the challenge's endpoint holds them.
CK25_DATA = ("prod-inst.ttl", "text2sparql.ttl", "queries.ttl")
#: What the agent's store holds (the reference queries and questions would give the answers away).
CK25_AGENT_DATA = ("prod-inst.ttl", "text2sparql.ttl")
#: The stand-in model's key: nothing the page receives may hold it.
KEY = "sk-serve-stand-in-key"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen, seconds: float = 600) -> None:
    """Wait until the server at *url* answers; fail at once if its *process* ended, else after *seconds* (a busy
    machine can take minutes to start a server: only a dead or hung one should fail the wait)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=60):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                output = process.stdout.read() if process.stdout and process.poll() is not None else ""
                raise RuntimeError(f"{url} did not come up (exit {process.poll()}): {output[-2000:]}")
            time.sleep(0.1)


@dataclass
class Service:
    process: subprocess.Popen
    base: str
    log: Path

    def stop(self) -> str:
        stop_process(self.process)
        return self.log.read_text(errors="replace")


def start_serve(llm_base_url: str, graphs: dict[str, Path | str], log_dir: Path,
                datasets: dict[str, str] | None = None, options: tuple[str, ...] = (), key: str = KEY) -> Service:
    """``python -m serve`` on a free port, answering with the model at *llm_base_url* whose key is *key* (another
    port if a process took the free one before the server could bind it)."""
    for _ in range(5):
        port = free_port()
        arguments = [sys.executable, "-m", "serve", "--port", str(port), *options]
        for name, source in graphs.items():
            arguments += ["--graph", f"{name}={source}"]
        for iri, name in (datasets or {}).items():
            arguments += ["--dataset", f"{iri}={name}"]
        environment = {**os.environ, "OPENAI_BASE_URL": llm_base_url, "OPENAI_API_KEY": key}
        log = log_dir / f"serve-{port}.log"
        with log.open("w") as output:
            process = subprocess.Popen(arguments, env=environment, stdout=output, stderr=subprocess.STDOUT,
                                       text=True)
        service = Service(process, f"http://127.0.0.1:{port}", log)
        try:
            wait_for(service.base + "/chat/graphs", process)
            return service
        except RuntimeError as error:
            output = service.stop()
            if "address already in use" not in output:
                raise RuntimeError(f"{error}\n{output[-3000:]}") from None
    raise RuntimeError("no free port for the server after 5 tries")


def build_fixture_store(directory: Path, name: str) -> Path:
    """The tests' graph *name* (``tests/fixtures/graphs/NAME.ttl``, by its profile ``NAME.toml``) in a local store in
    *directory*."""
    from tests.support.graphs import fixture_graph

    kb = fixture_graph(directory, name)
    kb.close()
    return kb.directory


def build_library_store(directory: Path) -> Path:
    """The tests' small graph with a profile of its own, a library catalogue (no query service to link to), in a
    local store in *directory*."""
    return build_fixture_store(directory, "library")


def ck25_questions(shared_dir: Path) -> Path:
    path = shared_dir / "datasets" / "ck25" / "questions.yml"
    if not path.exists():
        pytest.skip("../shared/datasets/ck25 (the TEXT2SPARQL'25 corporate graph) is not present")
    return path


def build_ck25_store(shared_dir: Path, directory: Path) -> Path:
    """CK25 in a local store by its profile, as its profile says to build it: the instances and the challenge's
    vocabulary, never the graph of reference queries and questions."""
    from agent.graph import load_graph
    from agent.kb.local import LocalKB

    kb = LocalKB(directory, graph=load_graph("ck25"))
    kb.load([shared_dir / "datasets" / "ck25" / "graphs" / name for name in CK25_AGENT_DATA], progress=False)
    kb.close()
    return directory


@dataclass
class OxigraphServer:
    process: subprocess.Popen
    endpoint: str


def start_oxigraph(shared_dir: Path, directory: Path) -> OxigraphServer:
    """Oxigraph's own server over CK25, each file in its named graph and their union the default graph, as
    the challenge's endpoint holds it."""
    oxigraph = shutil.which("oxigraph", path=str(Path(sys.executable).parent)) or shutil.which("oxigraph")
    if oxigraph is None:
        pytest.fail("the oxigraph command is missing: install the test extra")
    graphs = shared_dir / "datasets" / "ck25" / "graphs"
    for name in CK25_DATA:
        iri = (graphs / f"{name}.graph").read_text().strip()
        subprocess.run([oxigraph, "load", "--location", str(directory), "--file", str(graphs / name),
                        "--graph", iri], check=True, capture_output=True, timeout=300)
    port = free_port()
    process = subprocess.Popen([oxigraph, "serve-read-only", "--location", str(directory), "--bind",
                                f"127.0.0.1:{port}", "--union-default-graph"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    endpoint = f"http://127.0.0.1:{port}/query"
    wait_for(f"{endpoint}?query=ASK%7B%7D", process)
    return OxigraphServer(process, endpoint)


def install_client(directory: Path) -> Path:
    """The official client, installed by pip into *directory* as published; a failure says why."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                           str(directory), CLIENT], capture_output=True, text=True, timeout=600)
    if done.returncode:
        pytest.fail(f"could not install {CLIENT} from the package index:\n{done.stderr[-2000:]}")
    return directory


def run_client(client: Path, *arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    """``text2sparql`` with *arguments*, as its console script runs it."""
    environment = {**os.environ, "PYTHONPATH": str(client)}
    return subprocess.run([sys.executable, "-c", "from text2sparql_client.cli import cli; cli()", *arguments],
                          cwd=cwd, env=environment, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="session")
def text2sparql_client(tmp_path_factory) -> Iterator[Path]:
    yield install_client(tmp_path_factory.mktemp("text2sparql-client"))
