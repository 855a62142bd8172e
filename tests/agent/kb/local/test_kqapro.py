"""KQA Pro's kb.json in the local store: the graph its SPARQL engine builds, streamed, searched and shown."""

import json

import pytest

from agent.graph import WIKIDATA, load_graph
from agent.kb.local import LoadError, LocalKB, OtherGraph
from agent.kb.local.kqapro import kqapro_batches
from agent.kb.local.loaders import read_batches
from agent.observations import format_entry, format_query_result, format_search
from tests.support import paths

FIXTURES = paths.FIXTURES / "kqapro"
KQAPRO = load_graph("kqapro")


@pytest.fixture(scope="module")
def kb(kqapro_kb):
    """KQA Pro's fixture store (:mod:`tests.support.kqapro`), by the name these tests give it."""
    return kqapro_kb


def rows(kb, query):
    result = kb.execute(query)
    assert result.status in ("ok", "empty"), result.message
    return sorted(tuple(term["value"] for term in row.values()) for row in result.bindings)


def test_names_are_collapsed_and_concepts_inherited(kb):
    assert rows(kb, 'SELECT ?e WHERE { ?e <pred:name> "Washington, D.C." }') == [("http://kqapro.invalid/Q61",)]
    assert rows(kb, 'SELECT ?n WHERE { ?e <pred:name> "Paris" ; <pred:instance_of> ?c . ?c <pred:name> ?n }') == [
        ("city",), ("city",), ("human settlement",), ("human settlement",)]
    assert rows(kb, 'SELECT (COUNT(DISTINCT ?e) AS ?n) WHERE { ?e <pred:instance_of> ?c . '
                    '?c <pred:name> "sovereign state" }') == [("3",)]
    # concepts are named, but no concept is an instance of its parents: only entities get the closure
    assert rows(kb, 'ASK { ?c <pred:name> "country" ; <pred:instance_of> ?p }') == []
    assert kb.execute('ASK { ?c <pred:name> "country" ; <pred:instance_of> ?p }').boolean is False


def test_each_value_type_is_a_node_as_the_engine_builds_it(kb):
    assert rows(kb, 'SELECT ?v ?u WHERE { ?e <pred:name> "Will Smith" ; <height> ?pv . ?pv <pred:value> ?v ; '
                    '<pred:unit> ?u }') == [("1.88", "metre")]
    assert rows(kb, 'SELECT ?y ?d WHERE { ?e <pred:name> "Melania Trump" ; <date_of_birth> ?pv . '
                    '?pv <pred:year> ?y ; <pred:date> ?d }') == [("1970", "1970-04-26")]
    assert rows(kb, 'SELECT ?p ?o WHERE { ?e <pred:name> "Washington, D.C." ; <inception> ?pv . ?pv ?p ?o }') == [
        ("pred:year", "1790")]
    assert rows(kb, 'SELECT ?v WHERE { ?e <pred:name> "Italy" ; <ISO_3166-1_alpha-2_code> ?pv . '
                    '?pv <pred:value> ?v }') == [("IT",)]
    # numbers are doubles, matched by value however a query writes them
    assert rows(kb, 'ASK { ?e <area> ?pv . ?pv <pred:value> "643801"^^xsd:double }') == []
    assert kb.execute('ASK { ?e <area> ?pv . ?pv <pred:value> "6.43801E5"^^xsd:double }').boolean is True


def test_facts_carry_their_qualifiers_and_backward_relations_point_from_concepts(kb):
    assert rows(kb, 'SELECT ?q WHERE { ?e <pred:name> "Ali" . ?a <pred:name> "Jon Voight" . ?e <cast_member> ?a . '
                    '[ <pred:fact_h> ?e ; <pred:fact_r> <cast_member> ; <pred:fact_t> ?a ] <character_role> ?qpv . '
                    '?qpv <pred:value> ?q }') == [("Howard Cosell",)]
    assert rows(kb, 'SELECT ?d WHERE { ?e <pred:name> "Paris" ; <population> ?pv . [ <pred:fact_h> ?e ; '
                    '<pred:fact_r> <population> ; <pred:fact_t> ?pv ] <point_in_time> ?q . ?q <pred:date> ?d }') == [
        ("2020-01-01",)]
    # "has part" backward to a concept is written from the concept; "capital" backward to France is France's own
    assert rows(kb, 'SELECT ?n WHERE { ?c <has_part> ?e . ?e <pred:name> "United States of America" . '
                    '?c <pred:name> ?n }') == [("country",)]
    assert rows(kb, 'SELECT ?s WHERE { ?s <capital> ?o . ?o <pred:name> "Paris" }') == [("http://kqapro.invalid/Q142",)]
    assert rows(kb, 'SELECT ?h WHERE { ?f <pred:fact_h> ?h ; <pred:fact_r> <has_part> }') == [
        ("http://kqapro.invalid/Q6256",)]


def test_batches_and_a_file_with_its_entities_first_give_the_same_graph(tmp_path):
    def triples(path, size):
        return sorted(line for batch in read_batches(path, size, KQAPRO) for line in batch.lines)

    whole = triples(FIXTURES / "kb.json", 1_000_000)
    assert triples(FIXTURES / "kb.json", 20) == whole
    data = json.loads((FIXTURES / "kb.json").read_text())
    reordered = tmp_path / "kb.json"
    reordered.write_text(json.dumps({"entities": data["entities"], "concepts": data["concepts"]}))
    assert triples(reordered, 20) == whole
    with open(reordered) as text, pytest.raises(LoadError, match="entities come before the concepts"):
        list(kqapro_batches(text, reordered, KQAPRO, 50))


@pytest.mark.parametrize("text, message", [
    ('{"concepts": {}, "entities": {"Q1": {"name": "x", "instanceOf": [], "attributes": [{"key": "k", '
     '"value": {"type": "date", "value": "2001/2/30"}, "qualifiers": {}}], "relations": []}}}',
     r"entity Q1, attribute 'k': '2001/2/30' is not a date"),
    ('{"concepts": {}, "entities": {"Q1": {"name": "x", "attributes": [{"key": "k", "value": {"type": "colour", '
     '"value": 1}, "qualifiers": {}}]}}}', "unknown value type 'colour'"),
    ('{"concepts": {},\n "entities": {"Q1": {"name": "x"}, \n "Q2": ', "line 3: not valid JSON"),
    ('{"concepts": {}, "entities": {"Q1": {"name": "x", "attributes": [{"key": "height", "value": {"type": '
     '"quantity", "value": "tall", "unit": "metre"}, "qualifiers": {}}]}}}',
     "entity Q1, attribute 'height': 'tall' is not a number"),
    ('{"concepts": {}, "entities": {"Q1": {"instanceOf": []}}}', "entity Q1 is malformed: KeyError"),
])
def test_a_bad_knowledge_base_names_the_place_and_leaves_the_store_as_it_was(kb, tmp_path, text, message):
    bad = tmp_path / "kb.json"
    bad.write_text(text)
    store = LocalKB(tmp_path / "store", graph=KQAPRO)
    store.load([FIXTURES / "kb.json"], progress=False)
    before = rows(store, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")
    with pytest.raises(LoadError, match=message):
        store.load([bad], progress=False)
    assert rows(store, "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }") == before
    assert [hit.id for hit in store.search("x").items] == []


def test_the_load_shows_its_progress_in_bytes(tmp_path, capsys):
    LocalKB(tmp_path / "store", graph=KQAPRO).load([FIXTURES / "kb.json"])
    progress = capsys.readouterr().err
    size = (FIXTURES / "kb.json").stat().st_size
    assert "loading kb.json" in progress and "100%" in progress and f"{size / 1000:.1f}k/{size / 1000:.1f}k" in progress
    assert "storing 417 triples of kb.json" in progress


def test_search_tells_same_name_entities_apart(kb):
    trumps = kb.search("donald trump").items
    assert [(hit.id, hit.description) for hit in trumps] == [
        ("Q22686", "human; date of birth 1946-06-14; ISNI 0000 0001 0898 6765; height 1.9 metre"),
        ("Q1000002", "human; date of birth 1970-01-01; ISNI 0000 0000 0000 0001; height 1.7 metre")]
    assert [hit.description for hit in kb.search("city").items][:1] == ["class (human settlement)"]
    found = format_search(kb.search("date of birth"))
    assert "date of birth (date_of_birth) [date node: <pred:date> (xsd:date), <pred:year>]" in found
    assert "point in time (point_in_time) [qualifier; date node: <pred:date> (xsd:date), <pred:year> or year node" \
        in format_search(kb.search("point in time"))


def test_an_entry_shows_values_units_and_qualifiers(kb):
    entry = format_entry(kb.get_entry("Q90"))
    assert entry.startswith("Paris (Q90): city; population 2145906; area 105.4 square kilometre")
    edges = json.loads(entry.split("\n", 1)[1])
    assert edges["population (<population>)"] == {"value": "2145906",
                                                  "qualifiers": {"point in time (<point_in_time>)": "2020-01-01"}}
    assert edges["elevation above sea level (<elevation_above_sea_level>)"] == "35 metre"
    assert edges["instance of (<pred:instance_of>)"] == ["city (Q515)", "human settlement (Q486972)"]
    assert kb.get_entry("Q999") is None
    examples = kb.property_examples("character_role")
    assert {example.value.text for example in examples} == {"Muhammad Ali", "Howard Cosell"}
    assert examples[0].subject.text.startswith("(fact: Ali <cast_member> ")
    assert kb.property_examples("no_such_key") is None


def test_query_results_show_names_and_values(kb):
    text = format_query_result(kb.execute('SELECT ?e ?pv WHERE { ?e <pred:name> "Skyfall" ; <box_office> ?pv }'))
    assert text.splitlines()[1] == "Skyfall <Q4941>\t1108561013 United States dollar (value node)"


def test_the_store_keeps_its_graph(kb, tmp_path):
    reopened = LocalKB(kb.directory, read_only=True)
    assert reopened.graph.name == "kqapro"
    assert reopened.execute('ASK { ?e <pred:name> "Rome" }').boolean is True
    with pytest.raises(OtherGraph, match="holds the graph 'kqapro', not 'wikidata'"):
        LocalKB(kb.directory, read_only=True, graph=WIKIDATA)
    wikidata_json = tmp_path / "Q1.json"
    wikidata_json.write_text('{"id": "Q1", "labels": {}}')
    with pytest.raises(LoadError, match="Q1.json: not KQA Pro's kb.json: it has no concepts and no entities"):
        LocalKB(tmp_path / "store", graph=KQAPRO).load([wikidata_json], progress=False)
    with pytest.raises(LoadError, match="Wikidata KGTK loads into a Wikidata store, not into one of the graph"):
        LocalKB(tmp_path / "store", graph=KQAPRO).load([tmp_path / "edges.tsv"], progress=False)
