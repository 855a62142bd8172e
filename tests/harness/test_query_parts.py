"""A query's parts and upstream's post-processing: strings, IRIs and comments are never mistaken for syntax."""

import pytest

from harness.query_parts import projected_variables, query_parts
from harness.upstream_postprocessing import drop_limit_10, ids_before_labels, postprocess, select_distinct

BULLS = '''PREFIX ex: <http://example.org/>
SELECT DISTINCT ?season ?seasonLabel WHERE {
  wd:Q128109 p:P1346 ?s .   # "}" in a comment
  ?s pq:P585 ?season .
  SERVICE wikibase:label { bd:serviceParam wikibase:language "en". }
} ORDER BY ?season LIMIT 20'''


def test_query_parts_are_the_query_byte_for_byte():
    parts = query_parts(BULLS)
    assert parts.prologue + parts.form + parts.head + parts.group + parts.tail == BULLS
    assert parts.form == "SELECT" and parts.tail == " ORDER BY ?season LIMIT 20"
    assert parts.tail_keywords == ("ORDER", "LIMIT") and parts.limit == 20 and not parts.aggregates
    assert parts.projection == " DISTINCT ?season ?seasonLabel " and parts.where == "WHERE " and parts.values == ""
    assert query_parts("CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }") is None
    assert query_parts("SELECT ?x WHERE { ?x ?p ?o") is None
    values = query_parts('SELECT ?x WHERE { ?x rdfs:label "} LIMIT 0" } ORDER BY ?x # the VALUES below\n'
                         "VALUES ?o { 1 }")
    assert values.limit is None and values.values == "VALUES ?o { 1 }"


def test_projection_reads_expressions_and_ignores_subqueries():
    query = "SELECT ?a (COUNT(?b) AS ?n) WHERE { { SELECT ?b WHERE { ?b ?p ?o } } ?a ?q ?b } GROUP BY ?a"
    assert projected_variables(query) == ["a", "n"]
    assert projected_variables("SELECT * WHERE { ?x ?p ?o }") == []


LABEL_ONLY = '''SELECT ?placeLabel WHERE {
  wd:Q33391 wdt:P20 ?place .   # "SELECT" in a comment
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }
}'''


def test_upstreams_post_processing_adds_distinct_everywhere_and_ids_before_labels():
    assert postprocess(LABEL_ONLY, stopped=True) == LABEL_ONLY.replace(
        "SELECT ?placeLabel", "SELECT DISTINCT ?place ?placeLabel", 1)
    nested = "SELECT (AVG(?n) AS ?a) WHERE { { SELECT ?p (COUNT(*) AS ?n) WHERE { ?p wdt:P26 ?s } GROUP BY ?p } }"
    assert select_distinct(nested) == nested.replace("SELECT", "SELECT DISTINCT")
    mixed = "SELECT ?x WHERE { { SELECT DISTINCT ?x WHERE { ?x ?p ?o } } }"
    assert select_distinct(mixed) == mixed                       # one SELECT DISTINCT: upstream changes nothing
    assert select_distinct('ASK { ?x rdfs:label "SELECT" }') == 'ASK { ?x rdfs:label "SELECT" }'
    assert ids_before_labels("SELECT DISTINCT ?x ?xLabel WHERE { ?x ?p ?o }") == \
        "SELECT DISTINCT ?x ?xLabel WHERE { ?x ?p ?o }"
    assert ids_before_labels("SELECT DISTINCT ?aLabel ?bLabel { ?a ?p ?b }") == \
        "SELECT DISTINCT ?aLabel ?bLabel { ?a ?p ?b }"           # no WHERE: upstream's pattern does not match


@pytest.mark.parametrize("query, stopped, expected", [
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }\nLIMIT 10", True, "SELECT DISTINCT ?x WHERE { ?x wdt:P31 wd:Q5 }\n"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }\nLIMIT 10", False,
     "SELECT DISTINCT ?x WHERE { ?x wdt:P31 wd:Q5 }\nLIMIT 10"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } LIMIT 5", True, "SELECT DISTINCT ?x WHERE { ?x wdt:P31 wd:Q5 } LIMIT 5"),
    ('SELECT ?x WHERE { ?x rdfs:label "LIMIT 10" }', True, 'SELECT DISTINCT ?x WHERE { ?x rdfs:label "LIMIT 10" }'),
])
def test_only_the_stopped_on_querys_final_limit_10_goes(query, stopped, expected):
    assert postprocess(query, stopped) == expected
    assert drop_limit_10("ASK { ?x ?p ?o }") == "ASK { ?x ?p ?o }"
