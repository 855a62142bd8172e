"""The tests' small graphs (``tests/fixtures/graphs/NAME.ttl``, each with its profile ``NAME.toml``), loaded into
an embedded store as an operator loads one."""

from __future__ import annotations

from pathlib import Path

from agent.graph import GraphProfile, load_graph
from agent.kb.local import LocalKB
from tests.support.paths import FIXTURES

GRAPHS = FIXTURES / "graphs"


def fixture_profile(name: str) -> GraphProfile:
    """The profile of the tests' graph *name*."""
    return load_graph(GRAPHS / f"{name}.toml")


def fixture_graph(directory: Path, name: str, timeout: float | None = None) -> LocalKB:
    """The tests' graph *name* loaded into a new store in *directory*, open (the caller closes it)."""
    options = {"timeout": timeout} if timeout is not None else {}
    kb = LocalKB(directory / "store", graph=fixture_profile(name), **options)
    kb.load([GRAPHS / f"{name}.ttl"], progress=False)
    return kb
