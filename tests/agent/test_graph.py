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


CK25_LABEL = 'label = "http://www.w3.org/2000/01/rdf-schema#label"'


@pytest.mark.parametrize("old, new, message", [
    (CK25_LABEL, 'label = ["http://www.w3.org/2000/01/rdf-schema#label", 7]',
     r"\[names\] label must be a string or a list of strings, not a list holding an integer"),
    ('languages = ["en"]', 'language = ["en", "nl"]',
     r'\[names\] language must be a string, not a list of strings \(several languages: languages = \["en", "nl"\]\)'),
    ('languages = ["en"]', 'languages = "en"', r"\[names\] languages must be a list of strings, not a string"),
    ("case_sensitive = true", 'case_sensitive = "yes"', r"\[ids\] case_sensitive must be true or false, not a string"),
    ('dialect = "sparql11"', "dialect = 11", r"\[sparql\] dialect must be a string, not an integer"),
    ('pv = "http://ld.company.org/prod-vocab/"', "pv = 1",
     r"prefixes must be a table of strings, not a table holding an integer"),
    ('checks = "IRIs, properties, classes, value types"', 'checks = ["IRIs"]',
     r"\[prompt\] checks must be a string, not a list of strings"),
    ('title = "the company knowledge graph"', "title = 2026-01-01",
     r"title must be a string, not a date or time"),
    ('languages = ["en"]', 'language = "en"\nlanguages = ["en"]', r"\[names\]: give language or languages, not both"),
])
def test_every_value_of_a_profile_is_checked_for_its_type_in_one_line(tmp_path, old, new, message):
    source = load_graph("ck25").source
    assert old in source
    path = tmp_path / "mine.toml"
    path.write_text(source.replace(old, new, 1))
    with pytest.raises(ProfileError, match=rf"^{tmp_path / 'mine.toml'}:? .*{message}") as raised:
        load_graph(path)
    assert "\n" not in str(raised.value)


def test_a_profile_names_one_label_predicate_or_several_and_its_languages_in_order():
    assert WIKIDATA.names.labels == ("http://www.w3.org/2000/01/rdf-schema#label",)  # the single-string form
    assert WIKIDATA.names.languages == ("en",) and KQAPRO.names.languages == ()
    assert load_graph("ck25").names.languages == ("en",)  # its instance labels are untagged: read as well
    source = load_graph("ck25").source.replace(
        CK25_LABEL, 'label = ["http://www.w3.org/2004/02/skos/core#prefLabel", "http://schema.org/name"]').replace(
        'languages = ["en"]', 'languages = ["en", "NL"]')
    names = parse_profile(source).names
    assert names.labels == ("http://www.w3.org/2004/02/skos/core#prefLabel", "http://schema.org/name")
    assert names.label == "http://www.w3.org/2004/02/skos/core#prefLabel" and names.languages == ("en", "nl")
    # The first listed language, then the next, then untagged, then any: the first predicate before the others.
    assert sorted(["fr", "", "nl", "en-GB"], key=names.rank) == ["en-GB", "nl", "", "fr"]
    assert names.rank("nl") < names.rank("nl", other=True) < names.rank("")
    assert [names.searched(language) for language in ("en", "nl-BE", "", "fr")] == [True, True, True, False]
