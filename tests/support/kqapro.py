"""KQA Pro's fixture: a few questions of each split (the datasets' layout under ``FIXTURES``) and the part of its
graph they need, loaded into a local store once per test module that asks for it."""

import json
from pathlib import Path

import pytest

from agent.graph import load_graph
from agent.kb.local import LocalKB
from tests.support import paths

#: The datasets directory holding ``kqapro/``.
FIXTURES = paths.FIXTURES
VAL = json.loads((FIXTURES / "kqapro" / "val.json").read_text())


@pytest.fixture(scope="module")
def kqapro_store(tmp_path_factory) -> Path:
    """The fixture's graph (``kqapro/kb.json``) loaded into a local store of the KQA Pro profile: its directory."""
    directory = tmp_path_factory.mktemp("kqapro") / "store"
    LocalKB(directory, graph=load_graph("kqapro")).load([FIXTURES / "kqapro" / "kb.json"], progress=False)
    return directory


@pytest.fixture(scope="module")
def kqapro_kb(kqapro_store) -> LocalKB:
    """That store, opened read-only as the agent and the harness open it."""
    return LocalKB(kqapro_store, read_only=True, timeout=20)
