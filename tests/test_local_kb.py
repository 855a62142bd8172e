"""The embedded store: loading the three formats, WDQS-compatible querying, search, entries, the CLI."""

import bz2
import gzip
import json

import pytest

from agent.kb.local import LoadError, LocalKB
from agent.kb.__main__ import main as kb_main
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities

TTL = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix p: <http://www.wikidata.org/prop/> .
@prefix ps: <http://www.wikidata.org/prop/statement/> .
@prefix pq: <http://www.wikidata.org/prop/qualifier/> .
@prefix wds: <http://www.wikidata.org/entity/statement/> .
@prefix wikibase: <http://wikiba.se/ontology#> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
@prefix schema: <http://schema.org/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix geo: <http://www.opengis.net/ont/geosparql#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
wd:Q90 rdfs:label "Paris"@en, "Paris"@fr ; schema:description "capital of France"@en ;
  skos:altLabel "City of Light"@en, "Paname"@en ; wikibase:sitelinks "300"^^xsd:integer ;
  wdt:P625 "Point(2.35 48.86)"^^geo:wktLiteral .
wd:Q167646 rdfs:label "Paris"@en ; schema:description "son of Priam"@en ; wikibase:sitelinks "80"^^xsd:integer .
wd:Q830149 rdfs:label "Paris Hilton"@en ; wikibase:sitelinks "90"^^xsd:integer .
wd:Q64 rdfs:label "Berlin"@en ; wdt:P625 "Point(13.38 52.52)"^^geo:wktLiteral .
wd:Q1 rdfs:label "Université de Montréal"@fr, "University of Montreal"@en .
wd:Q2 rdfs:label "thing without English label"@de .
wd:P625 rdfs:label "coordinate location"@en ; wikibase:propertyType wikibase:GlobeCoordinate .
"""
KGTK = ("node1\tlabel\tnode2\tid\n"
        "Q100\tlabel\t'Boston'@en\tQ100-label-en\n"
        "Q100\talias\t'Beantown'@en\tQ100-alias-en\n"
        "Q100\tdescription\t'capital of Massachusetts'@en\tQ100-description-en\n"
        "Q100\tP571\t^1630-09-07T00:00:00Z/11\tQ100-P571-1\n"
        "Q100\tP1082\t+675647\tQ100-P1082-1\n"
        "Q100\tP31\tQ515\tQ100-P31-Q515-1\n"
        "Q100\tPdirected_pagerank\t0.5\tQ100-pagerank\n"
        "P571\tdatatype\ttime\tP571-datatype\n"
        "P571\tlabel\t'inception'@en\tP571-label-en\n")


@pytest.fixture
def kb(tmp_path):
    (tmp_path / "small.ttl").write_text(TTL)
    with gzip.open(tmp_path / "euler.json.gz", "wt") as out:
        out.write(json.dumps({"entities": {entity["id"]: entity for entity in euler_entities()}}))
    (tmp_path / "boston.tsv").write_text(KGTK)
    store = LocalKB(tmp_path / "store", timeout=10)
    store.load([tmp_path / "small.ttl", tmp_path / "euler.json.gz", tmp_path / "boston.tsv"], progress=False)
    return store


def test_search_ranks_exact_then_prefix_then_words_with_popularity(kb):
    assert [hit.id for hit in kb.search("paris").items] == ["Q90", "Q167646", "Q830149"]
    assert [hit.id for hit in kb.search("City of Light").items] == ["Q90"]  # an alias
    assert [hit.id for hit in kb.search("universite de montreal").items] == []  # the French label: not English
    assert [hit.id for hit in kb.search("UNIVERSITY OF MONTRÉAL").items] == ["Q1"]  # case and accents
    assert [hit.id for hit in kb.search("hilton").items] == ["Q830149"]  # a word inside the label
    assert kb.search("Beantown").items[0].description == "capital of Massachusetts"


def test_properties_are_found_with_their_datatype(kb):
    [coordinates] = kb.search("coordinate location").properties
    assert (coordinates.id, coordinates.datatype) == ("P625", "globe-coordinate")
    assert kb.search("doctoral advisor").properties[0].datatype == "wikibase-item"


def test_json_entities_map_like_the_query_service(kb):
    assert kb.execute(EULER_ADVISORS_QUERY).bindings == [
        {"advisor": {"type": "uri", "value": "http://www.wikidata.org/entity/Q124500"}}]
    statement = kb.execute("SELECT ?end WHERE { wd:Q7604 p:P69 ?s . ?s ps:P69 wd:Q372608 ; pq:P582 ?end ; "
                           "wikibase:rank wikibase:NormalRank ; a wikibase:BestRank }")
    assert statement.bindings[0]["end"]["value"].startswith("1726")
    assert kb.execute("ASK { wd:P184 wikibase:directClaim wdt:P184 ; wikibase:propertyType wikibase:WikibaseItem }"
                      ).boolean is True


def test_entries_and_property_examples(kb):
    entry = kb.get_entry("Q7604")
    edges = {(claim.property_label, claim.property_id, claim.value.text, claim.value.id) for claim in entry.claims}
    assert ("doctoral advisor", "P184", "Johann Bernoulli", "Q124500") in edges
    assert not any(claim.property_id == "P214" for claim in entry.claims)  # the external identifier
    educated = next(claim for claim in entry.claims if claim.property_id == "P69")
    assert [(q.property_label, q.value.text) for q in educated.qualifiers] == [("end time", "1726-01-01")]
    [example] = kb.property_examples("P184")
    assert (example.subject.id, example.value.id) == ("Q7604", "Q124500")
    assert kb.get_entry("Q999999") is None and kb.property_examples("P999999") is None
    boston = kb.get_entry("Q100")
    assert ("inception", "1630-09-07") in {(c.property_label, c.value.text) for c in boston.claims}


def test_label_service_forms(kb):
    auto = kb.execute('SELECT ?c ?cLabel ?cDescription ?cAltLabel WHERE { VALUES ?c { wd:Q90 wd:Q2 } '
                      'SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],fr". } }')
    rows = {row["c"]["value"].rsplit("/", 1)[1]: row for row in auto.bindings}
    assert rows["Q90"]["cLabel"] == {"type": "literal", "value": "Paris", "xml:lang": "en"}
    assert rows["Q90"]["cDescription"]["value"] == "capital of France"
    assert sorted(rows["Q90"]["cAltLabel"]["value"].split(", ")) == ["City of Light", "Paname"]
    assert rows["Q2"]["cLabel"] == {"type": "literal", "value": "Q2"}  # no label: the bare ID
    french = kb.execute('SELECT ?cLabel WHERE { BIND(wd:Q1 AS ?c) SERVICE wikibase:label { '
                        'bd:serviceParam wikibase:language "fr,en". } }')
    assert french.bindings[0]["cLabel"]["value"] == "Université de Montréal"
    manual = kb.execute('SELECT ?name WHERE { BIND(wd:Q90 AS ?c) SERVICE wikibase:label { '
                        'bd:serviceParam wikibase:language "en". ?c rdfs:label ?name . } }')
    assert manual.bindings[0]["name"]["value"] == "Paris"


def test_hints_functions_and_named_subqueries(kb):
    hinted = kb.execute("SELECT ?x WHERE { hint:Query hint:optimizer \"None\" . ?x wdt:P31 wd:Q5 . }")
    assert hinted.status == "ok" and len(hinted.bindings) == 2
    distance = kb.execute("SELECT ?d WHERE { wd:Q90 wdt:P625 ?a . wd:Q64 wdt:P625 ?b . "
                          "BIND(geof:distance(?a, ?b) AS ?d) BIND(geof:latitude(?a) AS ?lat) }")
    assert 870 < float(distance.bindings[0]["d"]["value"]) < 890
    decoded = kb.execute('SELECT ?t WHERE { BIND(wikibase:decodeUri("Caf%C3%A9") AS ?t) }')
    assert decoded.bindings[0]["t"]["value"] == "Café"
    named = kb.execute("SELECT ?x WITH { SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } } AS %humans "
                       "WHERE { INCLUDE %humans }")
    assert named.status == "ok" and len(named.bindings) == 2


@pytest.mark.parametrize("query, message", [
    ('SELECT ?x WHERE { SERVICE wikibase:mwapi { bd:serviceParam wikibase:api "Search" } }',
     "not supported offline: SERVICE wikibase:mwapi"),
    ("SELECT ?x WHERE { SERVICE wikibase:around { ?x wdt:P625 ?c } }", "not supported offline"),
    ("SELECT ?x WHERE { SERVICE <https://example.org/sparql> { ?x ?p ?o } }", "not supported offline"),
])
def test_what_cannot_run_offline_says_so(kb, query, message):
    result = kb.execute(query)
    assert result.status == "error" and message in result.message


def test_syntax_errors_and_empty_results(kb):
    assert kb.execute("SELECT ?x WHERE { ?x ?y }").status == "syntax_error"
    assert kb.execute("SELECT ?x WHERE { ?x wdt:P31 wd:Q999 }").status == "empty"


def test_a_timeout_stops_the_query_and_the_store_still_answers(kb):
    heavy = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    result = kb.execute(heavy, timeout=1)
    assert result.status == "timeout"
    assert kb.execute(EULER_ADVISORS_QUERY).status == "ok"


def test_a_bad_file_names_its_line_and_leaves_the_store_as_it_was(kb, tmp_path):
    before = kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").bindings
    bad = tmp_path / "bad.ttl"
    bad.write_text('<http://www.wikidata.org/entity/Q5000> <http://www.w3.org/2000/01/rdf-schema#label> "ok"@en .\n'
                   "<http://www.wikidata.org/entity/Q5001> this is not turtle\n")
    with pytest.raises(LoadError, match=r"bad\.ttl.*line 2"):
        kb.load([bad], progress=False)
    assert kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").bindings == before
    broken = tmp_path / "broken.json.bz2"
    broken.write_bytes(bz2.compress(b'[\n{"id": "Q1", "labels": {}}\n{not json}\n]'))
    with pytest.raises(LoadError, match=r"broken\.json\.bz2: line 3"):
        kb.load([broken], progress=False)
    wrong = tmp_path / "wrong.tsv"
    wrong.write_text("a\tb\n1\t2\n")
    with pytest.raises(LoadError, match=r"wrong\.tsv: line 1"):
        kb.load([wrong], progress=False)
    assert kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").bindings == before


def test_reopening_a_store_keeps_everything(kb):
    with pytest.raises(ValueError, match="open in another process"):
        LocalKB(kb.directory)
    kb.close()
    again = LocalKB(kb.directory)
    assert [hit.id for hit in again.search("paris").items][:1] == ["Q90"]


def test_the_command_line(tmp_path, capsys):
    (tmp_path / "small.ttl").write_text(TTL)
    store = str(tmp_path / "cli-store")
    assert kb_main(["load", "--store", store, str(tmp_path / "small.ttl")]) == 0
    assert kb_main(["search", "--store", store, "Paris"]) == 0
    assert "Paris (Q90): capital of France" in capsys.readouterr().out
    assert kb_main(["query", "--store", store, "--json",
                    "SELECT ?l WHERE { wd:Q64 rdfs:label ?l }"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]["bindings"][0]["l"]["value"] == "Berlin"
    assert kb_main(["query", "--store", store, "SELECT ?x WHERE {"]) == 1
    assert "Syntax error" in capsys.readouterr().out


def test_real_entities_and_property_list(shared_dir, tmp_path):
    kb = LocalKB(tmp_path / "real")
    properties = sorted((shared_dir / "wikidata" / "properties").glob("*.tsv.gz"))
    kb.load([shared_dir / "wikidata" / "Q42.ttl", *properties], progress=False)
    assert kb.search("Douglas Adams").items[0].id == "Q42"
    assert kb.search("educated at").properties[0].id == "P69"
    entry = kb.get_entry("Q42")
    educated = [claim for claim in entry.claims if claim.property_id == "P69"]
    assert educated and educated[0].property_label == "educated at"
    assert any(qualifier.property_id in ("P580", "P582") for claim in educated for qualifier in claim.qualifiers)


def test_the_arnold_subset_in_kgtk_form(shared_dir, tmp_path):
    arnold = shared_dir / "wikidata" / "arnold"
    kb = LocalKB(tmp_path / "arnold")
    names = ["labels.en", "aliases.en", "descriptions.en", "derived.P31", "claims.time",
             "metadata.pagerank.directed", "metadata.property.datatypes"]
    kb.load([arnold / f"{name}.tsv.gz" for name in names], progress=False)
    assert kb.search("Arnold Schwarzenegger").items[0].id == "Q2685"
    assert kb.search("austria").items[0].id == "Q40"  # the PageRank breaks the tie with other "Austria"s
    entry = kb.get_entry("Q2685")
    facts = {(claim.property_label, claim.value.text) for claim in entry.claims}
    assert ("instance of", "human") in facts and ("date of birth", "1947-07-30") in facts
    assert kb.search("date of birth").properties[0].datatype == "time"
