"""A one-line question that asks for yes/no, a year or a number gets its answer in that form; a request does not."""

import pytest

from agent.answer_form import fit_to_question, question_form
from agent.kb.base import QueryResult

XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.mark.parametrize("question, form", [
    ("Did the Chicago Bulls win at least two seasons of the NBA championship?", "yes_no"),
    ("Is ALDI also in Italy?", "yes_no"),
    ("are brooke raboutou and colin duffy from same state of the usa?", "yes_no"),
    ("Ist Bremerhaven eine Stadt?", "yes_no"),
    ("Est-ce que Paris est en France ?", "yes_no"),
    ("Is heidelberg university or university hamburg founded earlier?", None),   # a choice, not yes/no
    ("Is Lake Baikal bigger than the Great Bear Lake?", None),      # a SELECT of both areas has rows either way
    ("Ist der Rhein länger als die Weser?", None),
    ("How many people live in Hamburg each year?", None),           # one number per group
    ("In which year did ABBA publish their album The Visitors ?", "year"),
    ("En qué año cayó el muro de Berlín?", "year"),
    ("How many languages are widely used in India?", "count"),
    ("Wie viele Kinder hat Jeff Bezos?", "count"),
    ("In how many countries has IKEA been established?", "count"),
    ("Who won, and in which year?", None),
    ("When was Rumi born?", None),                                    # a date is the answer
    ("Who are the actresses in Portrait of a Lady on Fire?", None),
    # Requests for a query, as the forum writes them:
    ("Can someone write a query listing paintings by women?", None),
    ("Is it possible to get all lighthouses in Norway?", None),
    ("Is there a way to count the items without a label?", None),
    ("Paintings by women\nDoes anyone know how to list paintings by women with their museums?", None),
    ("Kann mir jemand eine Abfrage schreiben?", None),
])
def test_the_question_form_is_read_from_its_wording(question, form):
    assert question_form(question) == form


def uri(qid):
    return {"type": "uri", "value": f"http://www.wikidata.org/entity/{qid}"}


def rows(*bindings):
    return QueryResult("ok", variables=sorted({name for row in bindings for name in row}), bindings=list(bindings))


SEASONS = "SELECT DISTINCT ?season WHERE { wd:Q128109 wdt:P1346 ?season }"


def test_a_yes_no_question_with_rows_is_asked_and_without_rows_is_left_alone():
    found = rows({"season": uri("Q1")}, {"season": uri("Q2")})
    assert fit_to_question(SEASONS, found, "Did the Bulls win twice?") == \
        "ASK WHERE { wd:Q128109 wdt:P1346 ?season }"
    assert fit_to_question(SEASONS, QueryResult("empty"), "Did the Bulls win twice?") == SEASONS
    assert fit_to_question(SEASONS, found, "Which seasons did the Bulls win?") == SEASONS


def test_only_a_column_of_dates_becomes_a_year():
    query = "SELECT ?album ?date WHERE { ?album wdt:P577 ?date }"
    dated = rows({"album": uri("Q1"), "date": {"type": "literal", "value": "1981-11-30T00:00:00Z",
                                               "datatype": XSD + "dateTime"}})
    assert fit_to_question(query, dated, "In which year was The Visitors published?") == \
        "SELECT ?album (YEAR(?date) AS ?dateYear) WHERE { ?album wdt:P577 ?date }"
    yearly = rows({"album": uri("Q1"), "date": {"type": "literal", "value": "1981", "datatype": XSD + "integer"}})
    assert fit_to_question(query, yearly, "In which year was The Visitors published?") == query


def test_a_list_of_items_becomes_their_count_but_a_list_of_numbers_does_not():
    query = "SELECT ?lang ?langLabel WHERE { wd:Q668 wdt:P2936 ?lang }"
    listed = rows({"lang": uri("Q1"), "langLabel": {"type": "literal", "value": "Hindi"}},
                  {"lang": uri("Q2"), "langLabel": {"type": "literal", "value": "Tamil"}})
    assert fit_to_question(query, listed, "How many languages are used in India?") == \
        "SELECT (COUNT(DISTINCT ?lang) AS ?count) WHERE { wd:Q668 wdt:P2936 ?lang }"
    population = "SELECT ?population WHERE { wd:Q1055 wdt:P1082 ?population }"
    counted = rows(*({"population": {"type": "literal", "value": str(n), "datatype": XSD + "decimal"}}
                     for n in (1_800_000, 1_850_000)))
    assert fit_to_question(population, counted, "How many people live in Hamburg?") == population
    assert fit_to_question(query, rows({"lang": uri("Q1")}), "How many languages are used in India?") == query
