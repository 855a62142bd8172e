"""KQA Pro's official reading of an answer (``get_sparql_answer`` of the baselines' engine), rule by rule on the
fixture's store, beside the project's more lenient reading."""

import pytest

from harness.kqapro import answer_text, same_answer
from harness.kqapro_engine import answer_kind, attribute_key, key_type, read_answer
from tests.support.kqapro import VAL


@pytest.fixture(scope="module")
def kb(kqapro_kb):
    """KQA Pro's fixture store (:mod:`tests.support.kqapro`), by the name these tests give it."""
    return kqapro_kb


def both_readings(kb, sparql):
    """(the engine's answer, why it has none, the project's lenient answer) of *sparql* on *kb*."""
    result = kb.execute(sparql)
    assert result.status in ("ok", "empty"), result.message
    answer = result.boolean if result.boolean is not None else result.bindings
    reading = read_answer(sparql, answer, result.variables, kb)
    return reading.answer, reading.why, answer_text(answer, result.variables, kb)


def test_the_kind_of_answer_comes_from_the_querys_form():
    assert answer_kind("SELECT DISTINCT ?e WHERE { }") == answer_kind("SELECT ?e WHERE { }") == "name"
    assert answer_kind("SELECT (COUNT(DISTINCT ?e) AS ?count) WHERE { }") == "count"
    assert answer_kind("SELECT DISTINCT ?p WHERE { }") == "pred" and answer_kind("ASK { }") == "bool"
    for other in ("SELECT ?city WHERE { }", "SELECT (COUNT(?e) AS ?n) WHERE { }", "PREFIX x: <y> SELECT ?e WHERE { }",
                  " SELECT DISTINCT ?e WHERE { }", "select distinct ?e where { }"):
        assert answer_kind(other) == "attribute", other
    assert attribute_key('SELECT DISTINCT ?pv WHERE { ?e <pred:name> "X" . ?e <date_of_birth> ?pv .  }') == \
        "date of birth"
    assert attribute_key("SELECT DISTINCT ?pv WHERE { ?e <height> ?pv }") is None  # no " ." after the target
    assert attribute_key("SELECT ?x") is None


def test_key_types_as_kb_json_gives_them(kb):
    assert key_type(kb, "height") == "quantity" and key_type(kb, "ISNI") == "string"
    assert key_type(kb, "date of birth") == "date" and key_type(kb, "inception") == "date"  # a year key is a date key
    assert key_type(kb, "capital") is None and key_type(kb, "pred:name") is None


def test_every_gold_query_reads_as_its_gold_answer(kb):
    for item in VAL:
        engine, why, lenient = both_readings(kb, item["sparql"])
        assert engine is not None and same_answer(item["answer"], engine), (item["sparql"], why)
        assert engine == lenient


#: Final queries an agent might write for the fixture's questions, in forms the engine does not read as the
#: project does: (question index, query, the engine's answer, the project's lenient answer).
AGENT_QUERIES = [
    (0, 'SELECT ?e WHERE { ?c <pred:name> "France" . ?c <capital> ?e . ?e ?p ?o . }',
     None, "Paris"),  # one row per fact of Paris: not one row
    (0, 'SELECT DISTINCT ?name WHERE { ?c <pred:name> "France" . ?c <capital> ?x . ?x <pred:name> ?name . }',
     None, "Paris"),  # a name literal: the engine reads an attribute whose key is <pred:name>, no attribute key
    (0, 'SELECT DISTINCT ?e WHERE { ?c <pred:name> "France" . ?c <capital> ?x . ?x <pred:name> ?e . }',
     None, "Paris"),  # a literal where the engine expects a node
    (0, 'SELECT ?city WHERE { ?c <pred:name> "France" . ?c <capital> ?city . }', None, "Paris"),
    (4, 'SELECT (COUNT(?e) AS ?n) WHERE { ?e <pred:instance_of> ?c . ?c <pred:name> "city" . ?e <population> ?pv . '
        '?pv <pred:value> ?v . FILTER(?v > 1000000) }', None, "2"),
    (7, 'SELECT DISTINCT ?pv WHERE { ?e <pred:name> "Will Smith" . ?e <height> ?pv }', None, "1.88 metre"),
    (7, 'SELECT DISTINCT ?v WHERE { ?e <pred:name> "Will Smith" . ?e <height> ?pv . ?pv <pred:value> ?v . }',
     None, "1.88"),
    (7, 'PREFIX p: <http://example.org/> SELECT DISTINCT ?pv WHERE { ?e <pred:name> "Will Smith" . '
        '?e <height> ?pv .  }', None, "1.88 metre"),
    (8, 'SELECT DISTINCT ?e WHERE { ?p <pred:name> "Melania Trump" . ?p <date_of_birth> ?e .  }',
     None, "1970-04-26"),  # a value node has no name
    (10, 'SELECT DISTINCT ?pv WHERE { ?e <pred:name> "France" . ?e <area> ?pv .  }',
     "643801 square kilometre", "643801 square kilometre"),
    (9, 'SELECT DISTINCT ?pv WHERE { ?e <pred:name> "Washington, D.C." . ?e <inception> ?pv .  }', "1790", "1790"),
    (14, VAL[14]["sparql"], "country", "country"),
    (20, VAL[20]["sparql"], "no", "no"),
    (5, VAL[5]["sparql"], "2", "2"),
]


@pytest.mark.parametrize("index, sparql, engine, lenient", AGENT_QUERIES)
def test_the_engine_reads_only_what_its_form_and_one_row_allow(kb, index, sparql, engine, lenient):
    found, why, project = both_readings(kb, sparql)
    assert (found, project) == (engine, lenient), why
    assert (found is None) == bool(why)


def test_the_two_figures_on_the_agent_queries(kb):
    """The accuracy each reading gives the queries above: the headline and the labelled lenient figure."""
    engine = lenient = 0
    for index, sparql, _, _ in AGENT_QUERIES:
        found, _, project = both_readings(kb, sparql)
        engine += found is not None and same_answer(VAL[index]["answer"], found)
        lenient += same_answer(VAL[index]["answer"], project)
    assert (engine, lenient, len(AGENT_QUERIES)) == (5, 13, 14)


def test_no_query_or_no_result_reads_as_nothing(kb):
    assert read_answer(None, None, [], kb).answer is None
    assert read_answer(VAL[7]["sparql"], None, ["pv"], kb).why == "the query gave no result"
    assert read_answer(VAL[7]["sparql"], [], ["pv"], kb).why == "0 rows, not one"
    assert read_answer("SELECT DISTINCT ?e WHERE { }", True, [], kb).answer is None
