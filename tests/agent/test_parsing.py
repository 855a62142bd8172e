"""Plain-text steps as real models write them."""

import pytest

from agent.parsing import ParseError, parse_step

QUERY = 'SELECT ?x WHERE {\n  wd:Q42 wdt:P69 ?x .\n  FILTER(LANG(?l) = "en")\n}'


@pytest.mark.parametrize("reply", [
    f"Thought: run it\nAction: execute_sparql({QUERY})",
    f"Thought: run it\nAction: execute_sparql(\n{QUERY}\n)",
    f'Thought: run it\nAction: execute_sparql("""{QUERY}""")',
    f"Thought: run it\nAction: execute_sparql('''\n{QUERY}\n''')",
    f"Thought: run it\nAction: execute_sparql(`{QUERY}`)",
    f"Thought: run it\nAction: execute_sparql(```sparql\n{QUERY}\n```)",
    f"Thought: run it\nAction: execute_sparql\n```sparql\n{QUERY}\n```",
    f"Thought: run it\nAction: `execute_sparql`({QUERY})",
])
def test_multi_line_sparql_comes_back_exactly(reply):
    step = parse_step(reply)
    assert (step.thought, step.action, step.argument) == ("run it", "execute_sparql", QUERY)


def test_a_thought_over_several_lines_and_a_quoted_search():
    step = parse_step("Thought: first line\nsecond line\nAction: search_wikidata(\"Leonhard Euler\")")
    assert step.thought == "first line\nsecond line"
    assert (step.action, step.argument) == ("search_wikidata", "Leonhard Euler")


def test_parentheses_inside_the_argument_survive():
    step = parse_step("Thought: t\nAction: execute_sparql(SELECT (COUNT(?x) AS ?n) WHERE { ?x ?p ?o })")
    assert step.argument == "SELECT (COUNT(?x) AS ?n) WHERE { ?x ?p ?o }"


def test_stop_with_or_without_parentheses():
    assert parse_step("Thought: done\nAction: stop()").action == "stop"
    assert parse_step("Thought: done\nAction: stop").argument == ""


@pytest.mark.parametrize("reply, message", [
    ("The answer is 42.", "No action found"),
    ("Thought: hmm\nAction: ", "no name"),
    ("Thought: hmm\nAction: execute_sparql(SELECT ?x", "not closed"),
])
def test_unreadable_replies_say_what_to_write(reply, message):
    with pytest.raises(ParseError, match=message):
        parse_step(reply)
