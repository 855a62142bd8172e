"""Final-query rewrites change only what they must; strings, IRIs and comments are never mistaken for syntax."""

import pytest

from agent.rewrites import (
    add_distinct, add_label_ids, drop_exploratory_limit, projected_variables, query_parts, to_ask, to_count, to_year,
)

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
    query = "SELECT ?a (COUNT(?b) AS ?n) WHERE { { SELECT ?b WHERE { ?b ?p ?o } } ?a ?q ?b } GROUP BY ?a"
    assert projected_variables(query) == ["a", "n"]
    assert add_distinct(query).startswith("SELECT DISTINCT ?a (COUNT(?b) AS ?n) WHERE { { SELECT ?b WHERE")
    single_count = "SELECT (COUNT(?b) AS ?n) WHERE { ?b ?p ?o }"
    assert add_distinct(single_count) == single_count


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


def test_a_select_becomes_an_ask_over_the_same_group():
    parts = query_parts(BULLS)
    assert to_ask(BULLS) == parts.prologue + "ASK WHERE " + parts.group
    assert to_ask("SELECT ?x FROM <http://g> WHERE { ?x ?p ?o } VALUES ?o { 1 }") == \
        "ASK FROM <http://g> WHERE { ?x ?p ?o }\nVALUES ?o { 1 }"
    assert to_ask("SELECT ?x { ?x ?p ?o }") == "ASK { ?x ?p ?o }"
    assert to_ask('SELECT ?x WHERE { ?x rdfs:label "} LIMIT 0" }  # GROUP BY ?x') == \
        'ASK WHERE { ?x rdfs:label "} LIMIT 0" }'
    assert to_ask("SELECT ?x WHERE { ?x ?p ?o } # try LIMIT 0 later\n") == "ASK WHERE { ?x ?p ?o }"
    assert to_ask("SELECT ?x WHERE { ?x ?p ?o } ORDER BY ?x # the VALUES below\nVALUES ?o { 1 }") == \
        "ASK WHERE { ?x ?p ?o }\nVALUES ?o { 1 }"


@pytest.mark.parametrize("query", [
    "SELECT (COUNT(?x) AS ?n) WHERE { ?x ?p ?o }",              # one row whatever the pattern finds
    "SELECT ?p WHERE { ?x ?p ?o } GROUP BY ?p HAVING (COUNT(?x) > 2)",
    "SELECT ?x WHERE { ?x ?p ?o } OFFSET 3",
    "SELECT ?x WHERE { ?x ?p ?o } LIMIT 0",
    "ASK { ?x ?p ?o }",
])
def test_an_ask_is_made_only_where_it_means_the_select_has_rows(query):
    assert to_ask(query) == query


def test_a_date_is_shown_as_its_year_and_a_list_as_its_count():
    query = "SELECT ?album ?date WHERE { ?album wdt:P577 ?date } ORDER BY ?date LIMIT 3"
    assert to_year(query, "date") == ("SELECT ?album (YEAR(?date) AS ?dateYear) WHERE { ?album wdt:P577 ?date } "
                                      "ORDER BY ?date LIMIT 3")
    assert to_year(query, "dateYear") == query
    listed = "SELECT DISTINCT ?lang ?langLabel ?count WHERE { wd:Q668 wdt:P37 ?lang } ORDER BY ?langLabel"
    assert to_count(listed, "lang") == \
        "SELECT (COUNT(DISTINCT ?lang) AS ?count2) WHERE { wd:Q668 wdt:P37 ?lang }"
    assert to_count("SELECT ?p (COUNT(?x) AS ?n) WHERE { ?x ?p ?o } GROUP BY ?p", "p") == \
        "SELECT ?p (COUNT(?x) AS ?n) WHERE { ?x ?p ?o } GROUP BY ?p"
