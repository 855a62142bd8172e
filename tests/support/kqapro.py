"""KQA Pro's fixture: a few questions of each split (the datasets' layout under ``FIXTURES``) and the part of its
graph they need."""

import json
from pathlib import Path

from agent.graph import load_graph
from agent.kb.local import LocalKB

#: The datasets directory holding ``kqapro/``.
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VAL = json.loads((FIXTURES / "kqapro" / "val.json").read_text())


def fixture_kb(directory: Path) -> LocalKB:
    """The fixture's graph loaded into a local store under *directory*, opened read-only as the agent opens it."""
    LocalKB(directory / "store", graph=load_graph("kqapro")).load([FIXTURES / "kqapro" / "kb.json"], progress=False)
    return LocalKB(directory / "store", read_only=True, timeout=20)
