"""Final-query rewrites change only what they must; strings, IRIs and comments are never mistaken for syntax."""

import pytest

from agent.rewrites import add_distinct, add_label_ids, drop_exploratory_limit, projected_variables

LABEL_ONLY = '''SELECT ?placeLabel WHERE {
  wd:Q33391 wdt:P20 ?place .   # "?placeLabel" in a comment
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }
}'''


def test_an_id_is_added_beside_its_label_and_nothing_else_changes():
    rewritten = add_label_ids(LABEL_ONLY)
    assert rewritten == LABEL_ONLY.replace("SELECT ?placeLabel", "SELECT ?place ?placeLabel", 1)


@pytest.mark.parametrize("query", [
    "SELECT ?x ?xLabel WHERE { ?x wdt:P31 wd:Q5 }",                       # already projected
    "SELECT ?xLabel WHERE { wd:Q1 rdfs:label ?xLabel }",                   # ?x never bound
    "SELECT * WHERE { ?x rdfs:label ?xLabel }",                            # SELECT *
    'ASK { wd:Q1 rdfs:label "SELECT ?xLabel" }',                           # no SELECT, a string
])
def test_queries_that_need_no_id_are_left_alone(query):
    assert add_label_ids(query) == query


def test_projection_reads_expressions_and_ignores_subqueries():
    query = "SELECT ?a (COUNT(?b) AS ?n) WHERE { { SELECT ?b WHERE { ?b ?p ?o } } ?a ?q ?b }"
    assert projected_variables(query) == ["a", "n"]
    assert add_distinct(query).startswith("SELECT DISTINCT ?a (COUNT(?b) AS ?n) WHERE { { SELECT ?b WHERE")


@pytest.mark.parametrize("query, question, expected", [
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }\nLIMIT 10", "Which humans?", "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } ORDER BY ?x LIMIT 5", "Name the top 5 humans", None),
    ("SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } ORDER BY ?x LIMIT 5", "Name five humans", None),
    ("SELECT ?x WHERE { ?x wdt:P569 ?d } ORDER BY ?d LIMIT 1", "Who is the oldest?", None),
    ("SELECT ?x WHERE { { SELECT ?x WHERE { ?x ?p ?o } LIMIT 10 } }", "Which?", None),
    ('SELECT ?x WHERE { ?x rdfs:label "LIMIT 10" }', "Which?", None),
])
def test_only_an_exploratory_trailing_limit_goes(query, question, expected):
    assert drop_exploratory_limit(query, question) == (expected if expected is not None else query)


def test_distinct_goes_after_the_outermost_select_only_once():
    assert add_distinct("select ?x where { ?x ?p ?o }") == "select DISTINCT ?x where { ?x ?p ?o }"
    assert add_distinct("SELECT REDUCED ?x WHERE { ?x ?p ?o }") == "SELECT REDUCED ?x WHERE { ?x ?p ?o }"
    assert add_distinct("ASK { ?x ?p ?o }") == "ASK { ?x ?p ?o }"
