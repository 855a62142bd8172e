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


def test_describe_names_what_the_store_holds(kb):
    hits = {hit.id: hit for hit in kb.describe(["Q90", "P625", "Q515", "Q999999"])}
    assert (hits["Q90"].label, hits["Q90"].description) == ("Paris", "capital of France")
    assert hits["P625"].datatype == "globe-coordinate"
    assert hits["Q515"].label == "Q515"          # only the object of a claim here: it exists, unnamed
    assert "Q999999" not in hits                 # not in the store at all


def test_describe_names_ids_in_the_language_asked_from_the_store(kb):
    hits = {hit.id: hit.label for hit in kb.describe(["Q1", "Q90", "Q64"], language="fr")}
    assert hits == {"Q1": "Université de Montréal", "Q90": "Paris", "Q64": "Q64"}  # Berlin has no French label


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


@pytest.mark.parametrize("pattern", ["?x a pv:Service .", "?service a pv:Product .", "$service a pv:Product ."])
def test_a_name_ending_in_service_is_no_service_call(kb, pattern):
    result = kb.execute(f"PREFIX pv: <http://ld.company.org/prod-vocab/> SELECT * WHERE {{ {pattern} }}")
    assert result.status == "empty"


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
    names = ["labels.en", "aliases.en", "descriptions.en", "derived.P31", "derived.P279", "claims.time",
             "metadata.pagerank.directed", "metadata.property.datatypes"]
    kb.load([arnold / f"{name}.tsv.gz" for name in names], progress=False)
    # the most common idiom, walked from its constant end: as fast as the split form, the same rows
    assert kb.execute("ASK { ?s ?p ?o }").boolean is True
    cities = kb.execute("SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q515 } ORDER BY ?x", timeout=5)
    assert cities.status == "ok" and len(cities.bindings) > 1000
    split = kb.execute("SELECT ?x WHERE { ?c wdt:P279* wd:Q515 . ?x wdt:P31 ?c } ORDER BY ?x")
    assert cities.bindings == split.bindings
    assert kb.search("Arnold Schwarzenegger").items[0].id == "Q2685"
    assert kb.search("austria").items[0].id == "Q40"  # the PageRank breaks the tie with other "Austria"s
    entry = kb.get_entry("Q2685")
    facts = {(claim.property_label, claim.value.text) for claim in entry.claims}
    assert ("instance of", "human") in facts and ("date of birth", "1947-07-30") in facts
    assert kb.search("date of birth").properties[0].datatype == "time"


# -- answers as the query service gives them -----------------------------------------------------------

def test_the_label_service_written_first_keeps_every_row(kb):
    first = kb.execute('SELECT ?x ?xLabel WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } '
                       "?x wdt:P31 wd:Q5 . } ORDER BY ?x")
    last = kb.execute('SELECT ?x ?xLabel WHERE { ?x wdt:P31 wd:Q5 . SERVICE wikibase:label { '
                      'bd:serviceParam wikibase:language "en". } } ORDER BY ?x')
    assert [row["xLabel"]["value"] for row in first.bindings] == ["Johann Bernoulli", "Leonhard Euler"]
    assert first.bindings == last.bindings
    unlabelled = kb.execute("SELECT ?x ?xLabel WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "
                            '"en". } wd:Q100 wdt:P31 ?x . }')
    assert unlabelled.bindings == [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q515"},
                                    "xLabel": {"type": "literal", "value": "Q515"}}]


def test_the_label_service_written_first_on_a_real_entity(shared_dir, tmp_path):
    kb = LocalKB(tmp_path / "q42", timeout=10)
    kb.load([shared_dir / "wikidata" / "Q42.ttl"], progress=False)
    first = kb.execute('SELECT ?x ?xLabel WHERE { SERVICE wikibase:label { bd:serviceParam wikibase:language "en". } '
                       "wd:Q42 wdt:P735 ?x . } ORDER BY ?x")
    last = kb.execute("SELECT ?x ?xLabel WHERE { wd:Q42 wdt:P735 ?x . SERVICE wikibase:label { "
                      'bd:serviceParam wikibase:language "en". } } ORDER BY ?x')
    assert len(first.bindings) == 2 and first.bindings == last.bindings


def test_two_label_services_single_quoted_languages_and_alias_fallback(kb, tmp_path):
    (tmp_path / "fr.ttl").write_text('<http://www.wikidata.org/entity/Q64> '
                                     '<http://www.w3.org/2004/02/skos/core#altLabel> "Spree-Athen"@fr .\n')
    kb.load([tmp_path / "fr.ttl"], progress=False)
    result = kb.execute("SELECT ?a ?aLabel ?c ?cLabel ?cAltLabel WHERE { { SELECT ?a ?aLabel WHERE { "
                        "wd:Q7604 wdt:P184 ?a SERVICE wikibase:label { bd:serviceParam wikibase:language 'en' } } } "
                        "VALUES ?c { wd:Q64 } SERVICE wikibase:label { bd:serviceParam wikibase:language 'de,fr' } }")
    assert result.status == "ok", result.message
    [row] = result.bindings
    assert row["aLabel"]["value"] == "Johann Bernoulli"
    assert row["cLabel"]["value"] == "Q64"  # neither German nor French: the ID, not the English label
    assert row["cAltLabel"]["value"] == "Spree-Athen"  # no German aliases: the French ones


def test_sequence_paths_run_from_the_bound_end_with_the_same_rows(kb):
    from agent.kb.local.sparql import paths_from_bound_end

    assert paths_from_bound_end("SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q515 ; rdfs:label ?l }") == \
        "SELECT ?x WHERE { ?x wdt:P31 [ wdt:P279* wd:Q515 ] ; rdfs:label ?l }"
    unchanged = "SELECT ?c WHERE { wd:Q42 wdt:P31/wdt:P279* ?c FILTER(?a / 2 > 1) }"
    assert paths_from_bound_end(unchanged) == unchanged  # the constant is the subject: already walked from it
    path = kb.execute("SELECT ?x WHERE { ?x wdt:P31/wdt:P279* wd:Q5 } ORDER BY ?x")
    split = kb.execute("SELECT ?x WHERE { ?c wdt:P279* wd:Q5 . ?x wdt:P31 ?c } ORDER BY ?x")
    assert path.bindings == split.bindings and len(path.bindings) == 2


RANKED = ("id\tnode1\tlabel\tnode2\trank\tnode2;wikidatatype\n"
          "Q727-P1082-1\tQ727\tP1082\t+862965\tpreferred\tquantity\n"
          "Q727-P1082-2\tQ727\tP1082\t+821752\tnormal\tquantity\n"
          "Q727-P1082-3\tQ727\tP1082\t+779808\tnormal\tquantity\n"
          "Q727-P36-1\tQ727\tP36\tQ55\tdeprecated\twikibase-item\n"
          "Q727-P18-1\tQ727\tP18\t\"Amsterdam Canal's view.jpg\"\tnormal\tcommonsMedia\n"
          "Q727-P571-1\tQ727\tP571\t^1275-10-27T00:00:00Z/11\tnormal\ttime\n"
          "Q727-P2046-1\tQ727\tP2046\t+219.32Q712226\tnormal\tquantity\n")


def test_kgtk_ranks_value_nodes_and_commons_media(tmp_path, caplog):
    (tmp_path / "amsterdam.tsv").write_text(RANKED)
    kb = LocalKB(tmp_path / "ranked", timeout=10)
    with caplog.at_level("WARNING"):
        kb.load([tmp_path / "amsterdam.tsv"], progress=False)
    assert "no rank column" not in caplog.text
    populations = kb.execute("SELECT ?n WHERE { wd:Q727 wdt:P1082 ?n }")
    assert [row["n"]["value"] for row in populations.bindings] == ["862965"]
    assert len(kb.execute("SELECT ?n WHERE { wd:Q727 p:P1082/ps:P1082 ?n }").bindings) == 3
    assert kb.execute("ASK { wd:Q727 p:P1082 ?s . ?s a wikibase:BestRank ; ps:P1082 821752 }").boolean is False
    assert kb.execute("ASK { wd:Q727 wdt:P36 ?capital }").boolean is False  # deprecated
    image = kb.execute("SELECT ?i WHERE { wd:Q727 wdt:P18 ?i }").bindings[0]["i"]
    assert image == {"type": "uri", "value": "http://commons.wikimedia.org/wiki/Special:FilePath/"
                                              "Amsterdam%20Canal%27s%20view.jpg"}
    founded = kb.execute("SELECT ?t ?p WHERE { wd:Q727 p:P571/psv:P571 [ wikibase:timeValue ?t ; "
                         "wikibase:timePrecision ?p ] }").bindings[0]
    assert (founded["t"]["value"], founded["p"]["value"]) == ("1275-10-27T00:00:00Z", "11")
    area = kb.execute("SELECT ?a ?u WHERE { wd:Q727 p:P2046/psv:P2046 [ wikibase:quantityAmount ?a ; "
                      "wikibase:quantityUnit ?u ] }").bindings[0]
    assert (area["a"]["value"], area["u"]["value"]) == ("219.32", "http://www.wikidata.org/entity/Q712226")


def test_a_kgtk_file_without_ranks_is_named_once_at_load_time(tmp_path, caplog):
    (tmp_path / "a.tsv").write_text(KGTK)
    (tmp_path / "b.tsv").write_text(KGTK.replace("Q100", "Q101"))
    with caplog.at_level("WARNING"):
        LocalKB(tmp_path / "unranked").load([tmp_path / "a.tsv", tmp_path / "b.tsv"], progress=False)
    [note] = [record.getMessage() for record in caplog.records if "rank" in record.getMessage()]
    assert note.startswith("a.tsv, b.tsv: no rank column") and "wdt: returns all" in note


def json_entity_with_everything() -> dict:
    from tests.support.wikidata_server import entity, item_snak, statement, string_snak, time_snak

    quantity = {"snaktype": "value", "property": "P2048", "datatype": "quantity",
                "datavalue": {"type": "quantity", "value": {"amount": "+1.96", "unit":
                              "http://www.wikidata.org/entity/Q11573", "upperBound": "+1.97", "lowerBound": "+1.95"}}}
    coordinates = {"snaktype": "value", "property": "P625", "datatype": "globe-coordinate",
                   "datavalue": {"type": "globecoordinate", "value": {
                       "latitude": 51.5, "longitude": -0.14, "precision": 0.0001,
                       "globe": "http://www.wikidata.org/entity/Q2"}}}
    data = entity("Q42", "Douglas Adams", "English writer", claims={
        "P569": [statement(time_snak("P569", "+1952-03-11T00:00:00Z"))],
        "P2048": [statement(quantity)],
        "P625": [statement(coordinates)],
        "P40": [statement({"snaktype": "novalue", "property": "P40", "datatype": "wikibase-item"})],
        "P22": [statement({"snaktype": "somevalue", "property": "P22", "datatype": "wikibase-item",
                           "hash": "abc"})],
        "P18": [statement(string_snak("P18", "Douglas adams portrait cropped.jpg", "commonsMedia"))],
        "P69": [statement(item_snak("P69", "Q691283"), [time_snak("P582", "+1974-00-00T00:00:00Z", 9)])],
    })
    data["sitelinks"] = {"enwiki": {"site": "enwiki", "title": "Douglas Adams", "badges": []},
                         "frwikiquote": {"site": "frwikiquote", "title": "Douglas Adams", "badges": []}}
    return data


def test_json_loads_value_nodes_novalue_somevalue_sitelinks_and_commons_media(tmp_path):
    (tmp_path / "Q42.ndjson").write_text(json.dumps(json_entity_with_everything()) + "\n")
    kb = LocalKB(tmp_path / "everything", timeout=10)
    kb.load([tmp_path / "Q42.ndjson"], progress=False)

    def one(query: str) -> dict:
        result = kb.execute(query)
        assert result.status == "ok", (query, result.message)
        return {name: term["value"] for name, term in result.bindings[0].items()}

    assert one("SELECT ?t ?p ?c WHERE { wd:Q42 p:P569/psv:P569 ?v . ?v wikibase:timeValue ?t ; "
               "wikibase:timePrecision ?p ; wikibase:timeCalendarModel ?c }") == {
        "t": "1952-03-11T00:00:00Z", "p": "11", "c": "http://www.wikidata.org/entity/Q1985727"}
    assert one("SELECT ?a ?u ?hi WHERE { wd:Q42 p:P2048/psv:P2048 [ wikibase:quantityAmount ?a ; "
               "wikibase:quantityUnit ?u ; wikibase:quantityUpperBound ?hi ] }") == {
        "a": "1.96", "u": "http://www.wikidata.org/entity/Q11573", "hi": "1.97"}
    assert one("SELECT ?lat ?g WHERE { wd:Q42 p:P625/psv:P625 [ wikibase:geoLatitude ?lat ; "
               "wikibase:geoGlobe ?g ] }") == {"lat": "51.5", "g": "http://www.wikidata.org/entity/Q2"}
    assert one("SELECT ?y WHERE { wd:Q42 p:P69/pqv:P582 [ wikibase:timePrecision ?y ] }") == {"y": "9"}
    assert kb.execute("ASK { wd:Q42 a wdno:P40 . wd:Q42 p:P40 [ a wdno:P40 ] }").boolean is True
    assert one("SELECT ?f WHERE { wd:Q42 wdt:P22 ?f }")["f"].startswith("http://www.wikidata.org/.well-known/genid/")
    assert one("SELECT ?i WHERE { wd:Q42 wdt:P18 ?i }") == {
        "i": "http://commons.wikimedia.org/wiki/Special:FilePath/Douglas%20adams%20portrait%20cropped.jpg"}
    assert one("SELECT ?article ?name WHERE { ?article schema:about wd:Q42 ; "
               "schema:isPartOf <https://en.wikipedia.org/> ; schema:name ?name }") == {
        "article": "https://en.wikipedia.org/wiki/Douglas_Adams", "name": "Douglas Adams"}
    assert one("SELECT ?n WHERE { wd:Q42 wikibase:sitelinks ?n }") == {"n": "2"}
    assert one("SELECT ?lang WHERE { ?a schema:about wd:Q42 ; schema:isPartOf <https://fr.wikiquote.org/> ; "
               "schema:inLanguage ?lang }") == {"lang": "fr"}
    entry = {claim.property_id: claim.value.text for claim in kb.get_entry("Q42").claims}
    assert (entry["P40"], entry["P22"], entry["P569"]) == ("no value", "unknown value", "1952-03-11")


def test_the_query_service_dump_and_our_json_mapping_agree_on_commons_and_sitelinks(shared_dir, tmp_path):
    kb = LocalKB(tmp_path / "dump", timeout=10)
    kb.load([shared_dir / "wikidata" / "Q42.ttl"], progress=False)
    image = kb.execute("SELECT ?i WHERE { wd:Q42 wdt:P18 ?i }").bindings[0]["i"]["value"]
    (tmp_path / "Q42.json").write_text(json.dumps({"entities": {"Q42": json_entity_with_everything()}}))
    ours = LocalKB(tmp_path / "ours", timeout=10)
    ours.load([tmp_path / "Q42.json"], progress=False)
    assert ours.execute("SELECT ?i WHERE { wd:Q42 wdt:P18 ?i }").bindings[0]["i"]["value"] == image
    article = "SELECT ?a WHERE { ?a schema:about wd:Q42 ; schema:isPartOf <https://en.wikipedia.org/> }"
    assert ours.execute(article).bindings == kb.execute(article).bindings


def test_a_later_load_of_an_entity_replaces_its_terms_and_statements(kb, tmp_path):
    newer = [entity for entity in euler_entities() if entity["id"] == "Q7604"][0]
    newer = {**newer, "descriptions": {"en": {"language": "en", "value": "Swiss polymath"}},
             "claims": {"P31": newer["claims"]["P31"]}}
    (tmp_path / "newer.json").write_text(json.dumps(newer))
    kb.load([tmp_path / "newer.json"], progress=False)
    descriptions = kb.execute("SELECT ?d WHERE { wd:Q7604 schema:description ?d }")
    assert [row["d"]["value"] for row in descriptions.bindings] == ["Swiss polymath"]
    assert kb.execute("ASK { wd:Q7604 wdt:P184 ?advisor }").boolean is False
    assert kb.execute("ASK { wd:Q7604 p:P69 ?s }").boolean is False
    assert kb.execute("ASK { ?s ps:P69 wd:Q372608 }").boolean is False  # its statement nodes went too
    assert kb.search("Leonhard Euler").items[0].description == "Swiss polymath"
    assert kb.execute("ASK { wd:Q124500 wdt:P31 wd:Q5 }").boolean is True  # other entities stay


def test_ndjson_streams_in_batches_and_a_bad_last_line_adds_nothing(kb, tmp_path):
    from tests.support.wikidata_server import entity, item_snak, statement

    many = [entity(f"Q{n}", f"filler {n}", "a filler item", aliases=[f"f{n}", f"g{n}"],
                   claims={"P31": [statement(item_snak("P31", "Q5"))] * 6}) for n in range(10_000, 13_000)]
    lines = [json.dumps(item) for item in many]
    before = kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").bindings
    (tmp_path / "bad.ndjson").write_text("\n".join(lines) + "\n{broken\n")
    with pytest.raises(LoadError, match=r"bad\.ndjson: line 3001"):
        kb.load([tmp_path / "bad.ndjson"], progress=False)
    assert kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }").bindings == before
    assert kb.search("filler 10001").items == []
    (tmp_path / "good.ndjson").write_text("\n".join(lines) + "\n")
    assert kb.load([tmp_path / "good.ndjson"], progress=False) > 50_000  # more than one batch
    assert [hit.id for hit in kb.search("filler 12999").items] == ["Q12999"]
    assert kb.execute("SELECT (COUNT(*) AS ?n) WHERE { ?x wdt:P31 wd:Q5 }").bindings[0]["n"]["value"] == "3002"


# -- a store in use, a worker that dies ----------------------------------------------------------------

def test_a_killed_query_worker_is_a_clear_error_and_the_next_query_runs(kb):
    import os
    import signal
    import threading

    heavy = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i . ?j ?k ?l }"
    kb.execute("ASK { ?s ?p ?o }")
    worker = kb.engine._process.pid
    threading.Timer(1.0, os.kill, (worker, signal.SIGKILL)).start()
    result = kb.execute(heavy, timeout=30)
    assert result.status == "error"
    assert "query worker was killed by signal 9" in result.message and "reset by peer" not in result.message
    assert kb.execute(EULER_ADVISORS_QUERY).status == "ok"


def test_the_command_line_queries_a_store_a_running_process_holds(kb):
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "agent.kb", *args], capture_output=True, text=True, timeout=120)

    query = run("query", "--store", str(kb.directory), "SELECT ?l WHERE { wd:Q64 rdfs:label ?l }")
    assert query.returncode == 0 and "Berlin" in query.stdout, query.stderr
    search = run("search", "--store", str(kb.directory), "Paris")
    assert search.returncode == 0 and "Q90" in search.stdout
    load = run("load", "--store", str(kb.directory), "extra.ttl")
    assert load.returncode == 2 and "Traceback" not in load.stderr
    assert "is open in another process (a running bot or another load)" in load.stderr
    missing = run("query", "--store", str(kb.directory / "nowhere"), "ASK {}")
    assert missing.returncode == 2 and "no store in" in missing.stderr and "Traceback" not in missing.stderr


def test_help_names_the_formats_and_the_dialects(capsys):
    with pytest.raises(SystemExit):
        kb_main(["--help"])
    text = capsys.readouterr().out
    for word in (".ndjson", "KGTK", "rank column", "qlever", "sparql11", "wdqs", "not supported"):
        assert word in text


def test_any_number_of_agents_read_one_store(tmp_path):
    from agent.kb import open_kb

    (tmp_path / "small.ttl").write_text(TTL)
    loader = LocalKB(tmp_path / "store")
    loader.load([tmp_path / "small.ttl"], progress=False)
    loader.close()
    first, second = open_kb(tmp_path / "store"), open_kb(tmp_path / "store")
    try:
        for agent_kb in (first, second):
            assert agent_kb.execute("SELECT ?l WHERE { wd:Q64 rdfs:label ?l }").status == "ok"
            assert [hit.id for hit in agent_kb.search("Berlin").items][:1] == ["Q64"]
    finally:
        first.close()
        second.close()


def test_a_query_worker_that_cannot_open_the_store_says_why_at_once(tmp_path):
    import time

    from agent.kb.local.sparql import STARTUP_SECONDS, QueryEngine

    (tmp_path / "not-a-store").mkdir()
    started = time.monotonic()
    result = QueryEngine(tmp_path / "not-a-store").execute("ASK {}")
    assert time.monotonic() - started < STARTUP_SECONDS / 4
    assert result.status == "error" and "could not open" in result.message
    assert "cannot open the store: " in result.message and "see its error above" not in result.message


def test_a_graph_file_beside_a_file_names_the_graph_it_loads_into(tmp_path):
    (tmp_path / "small.ttl").write_text(TTL)
    (tmp_path / "small.ttl.graph").write_text("https://example.org/graphs/small\n")
    kb = LocalKB(tmp_path / "store")
    try:
        kb.load([tmp_path / "small.ttl"], progress=False)
        rows = kb.execute("SELECT DISTINCT ?g WHERE { GRAPH ?g { wd:Q64 ?p ?o } }").bindings
        assert rows == [{"g": {"type": "uri", "value": "https://example.org/graphs/small"}}]
        assert kb.execute("SELECT ?l WHERE { wd:Q64 rdfs:label ?l }").status == "ok"  # the default graph: the union
        (tmp_path / "bad.ttl").write_text(TTL)
        (tmp_path / "bad.ttl.graph").write_text("not an IRI <\n")
        with pytest.raises(LoadError, match=r"bad\.ttl\.graph: the name of the graph bad\.ttl goes to must be one IRI"):
            kb.load([tmp_path / "bad.ttl"], progress=False)
    finally:
        kb.close()
