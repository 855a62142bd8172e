"""Every prompt template renders, and a missing variable is an error, not a hole."""

import jinja2
import pytest

from agent.loop import AgentContext
from agent.prompts import PROMPTS_DIR, render

VARIABLES = {
    "policy": {"answer_guaranteed": True, "text_protocol": True},
    "question": {"question": "Who?", "context": AgentContext(draft_queries=["ASK {}"], entities=["Q1"])},
    "prune": {"question": "Who?", "entry": "{}"},
    "baseline": {"question": "Who?"},
}


@pytest.mark.parametrize("path", sorted(PROMPTS_DIR.glob("*.j2")), ids=lambda path: path.name)
def test_each_prompt_renders(path):
    name = path.name[:-3]
    assert name in VARIABLES, f"add example variables for prompts/{path.name} to this test"
    assert "Who?" in render(name, **VARIABLES[name]) or name == "policy"


def test_a_missing_variable_is_an_error():
    with pytest.raises(jinja2.UndefinedError):
        render("prune", question="Who?")
