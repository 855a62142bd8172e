"""Graph profiles: the shipped ones, what they tell the agent, and what a broken one says."""

import pytest

from agent.actions import ACTIONS, check_argument
from agent.graph import WIKIDATA, ProfileError, load_graph, parse_profile, profile_names
from agent.prompts import render

KQAPRO = load_graph("kqapro")


def policy(graph, scholarly_service=""):
    return render("policy", answer_guaranteed=True, text_protocol=False, actions=list(ACTIONS.values()),
                  scholarly_service=scholarly_service, graph=graph.prompt)


def test_the_shipped_profiles():
    assert {"wikidata", "kqapro"} <= set(profile_names())
    assert WIKIDATA.endpoint == "https://query.wikidata.org/sparql" and WIKIDATA.dialect == "wdqs"
    assert WIKIDATA.prefixes["wdt"] == "http://www.wikidata.org/prop/direct/"
    assert KQAPRO.endpoint == "" and KQAPRO.names.label == "pred:name" and KQAPRO.entries.qualified


def test_the_wikidata_policy_keeps_its_wikidata_lines():
    text = policy(WIKIDATA, WIKIDATA.scholarly_service)
    assert text.startswith("Answer with a Wikidata Query Service SPARQL query, as an expert editor would:")
    assert "2. Check each assumption (IDs, properties, qualifiers, P31/P279 paths) by a query." in text
    assert "4. Project entities, not only labels (?x ?xLabel)" in text
    assert "6. wdt: gives best-rank values only; p:/ps:/pq: all ranks and qualifiers.\n" in text
    assert "7. Query scholarly articles inside SERVICE wdsubgraph:scholarly_articles { … }." in text
    assert "- Every question has an answer in Wikidata:" in text


def test_the_kqapro_policy_takes_its_lines_from_its_profile():
    text = policy(KQAPRO)
    assert text.startswith("Answer with a SPARQL query over the KQA Pro knowledge base")
    assert '6. Queries name entities, not IDs: ?e <pred:name> "Paris"' in text
    assert "8. A qualifier hangs on its fact: [ <pred:fact_h> ?e" in text
    assert "- Every question has an answer in KQA Pro:" in text
    for wikidata_only in ("wdt:", "P31", "Scholarly", "?xLabel", "Wikidata"):
        assert wikidata_only not in text
    extract = render("extract", question="Who?", trace="", graph=KQAPRO.prompt)
    assert "a SPARQL query for the KQA Pro knowledge base" in extract


@pytest.mark.parametrize("written, expected", [
    ("Q42", "Q42"), ("wd:q42", "Q42"), ("https://www.wikidata.org/wiki/Q42", "Q42"),
    ("<http://www.wikidata.org/entity/Q42>", "Q42")])
def test_wikidata_items_as_people_write_them(written, expected):
    assert check_argument("get_wikidata_entry", written) == (expected, None)


def test_ids_are_checked_as_the_graph_writes_them():
    assert check_argument("get_property_examples", "wdt:P31") == ("P31", None)
    assert check_argument("get_wikidata_entry", "<Q30>", KQAPRO) == ("Q30", None)
    assert check_argument("get_property_examples", "<date_of_birth>", KQAPRO) == ("date_of_birth", None)
    assert check_argument("get_property_examples", "http://kqapro.invalid/population", KQAPRO) == ("population", None)
    _, error = check_argument("get_wikidata_entry", "Paris", KQAPRO)
    assert error == "'Paris' is not an item ID. Give one such as Q30 (search first if needed)."
    _, error = check_argument("get_property_examples", "date of birth", KQAPRO)
    assert "not a property ID. Give one such as population" in error
    _, error = check_argument("get_property_examples", "date_of_birth")
    assert "Give one such as P31" in error


def test_an_iri_is_written_as_the_graph_queries_write_it():
    assert KQAPRO.written("http://kqapro.invalid/date_of_birth") == "<date_of_birth>"
    assert KQAPRO.written("pred:instance_of") == "<pred:instance_of>"
    assert KQAPRO.written("http://www.w3.org/2001/XMLSchema#double") == "xsd:double"
    assert WIKIDATA.written("http://www.wikidata.org/prop/direct/P31") == "wdt:P31"


def test_a_broken_profile_names_its_file_and_what_is_wrong(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('name = "mine"\n[ids]\nitems = "http://x/"\nitem_pattern = "["\n')
    with pytest.raises(ProfileError, match=r"mine\.toml: \[ids\] item_pattern is not a regular expression"):
        load_graph(path)
    with pytest.raises(ProfileError, match=r"<profile> \[names\]: label is missing"):
        parse_profile('name = "x"\n[ids]\nitems = "a"\nitem_pattern = "a"\nitem_example = "a"\nproperties = "b"\n'
                      'property_pattern = "b"\nproperty_example = "b"\n')
    with pytest.raises(ProfileError, match="not valid TOML"):
        parse_profile("name = ")
    with pytest.raises(ProfileError, match="no graph profile 'dbpedia': name one of"):
        load_graph("dbpedia")


def test_a_misspelt_key_is_an_error_naming_it():
    text = (load_graph("ck25").source.replace("case_sensitive = true", "case_sensitve = true"))
    with pytest.raises(ProfileError, match=r"mine\.toml: unknown keys in \[ids\]: case_sensitve \(known: "):
        parse_profile(text, "mine.toml")
    with pytest.raises(ProfileError, match=r"unknown keys: titel"):
        parse_profile('titel = "x"\n' + load_graph("ck25").source)
