"""Every prompt template renders, and a missing variable is an error, not a hole."""

import jinja2
import pytest

from agent.actions import ACTIONS
from agent.graph import WIKIDATA
from agent.loop import AgentContext
from agent.prompts import render, template_names

VARIABLES = {
    "policy": {"answer_guaranteed": True, "text_protocol": True, "actions": list(ACTIONS.values()),
               "scholarly_service": "wdsubgraph:scholarly_articles", "graph": WIKIDATA.prompt},
    "extract": {"question": "Who?", "trace": "[1] Thought: look", "graph": WIKIDATA.prompt},
    "question": {"question": "Who?", "context": AgentContext(draft_queries=["ASK {}"], entities=["Q1"],
                                                             previous_query="SELECT ?x WHERE { ?x ?p ?o }")},
    "prune": {"question": "Who?", "entity": "Douglas Adams (Q42): English writer", "entry": "{}",
              "graph": WIKIDATA.prompt},
    "baseline": {"question": "Who?"},
}


@pytest.mark.parametrize("name", template_names())
def test_each_prompt_renders(name):
    assert name in VARIABLES, f"add example variables for prompts/{name}.j2 to this test"
    assert "Who?" in render(name, **VARIABLES[name]) or name == "policy"


def test_a_missing_variable_is_an_error():
    with pytest.raises(jinja2.UndefinedError):
        render("prune", question="Who?")


def test_the_policy_carries_every_instruction_of_the_papers_policy():
    from agent.actions import ACTIONS

    policy = render("policy", answer_guaranteed=True, text_protocol=False, actions=list(ACTIONS.values()),
                    scholarly_service="wdsubgraph:scholarly_articles", graph=WIKIDATA.prompt)
    for phrase in ("Run tiny query fragments first", "Check each assumption", "one piece at a time",
                   "Never repeat an action", "has an answer in Wikidata", "ASK for yes/no (only at the end)",
                   "not only labels", "answers seen in entries by a query", "Results are shown cut",
                   "2-5 sentences", "in their language", "claim only what results showed"):
        assert phrase in policy, phrase
