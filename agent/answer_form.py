"""The form of answer a question asks for, and the final query rewritten to give it.

An agent that has found the evidence sometimes stops on the query that shows
it rather than on the one that answers: "Did the Chicago Bulls win at least
two championships?" ends on the six seasons they won, "In which year did ABBA
publish The Visitors?" on the release date, "How many languages are used in
India?" on the list of languages.  The asker gets the rows and must still work
out the answer; a scorer gets the wrong kind of answer.  Three rewrites close
that gap, each only when the question's wording and the final result agree:

``ask``
    a yes/no question (it opens with an auxiliary verb, offers no
    alternatives and compares nothing) whose final SELECT found rows becomes
    ``ASK`` over the same pattern, whose answer is yes exactly when the SELECT
    had rows;
``year``
    a question that opens by asking for a year ("In which year …") whose final
    result has one column of dates shows that column as ``YEAR()``;
``count``
    a question that opens with "how many" and asks for one number (not one
    per group: "each", "per", "respectively") whose final SELECT lists more
    than one item (a column of entities in every row) becomes the count of
    those distinct items.

Only a one-line question is read this way.  A post of several lines, like
most on Wikidata:Request a query, asks for a query, and so does a line like
"Can someone write a query for …?" or "Is there a way to list …?": those get
the query the model chose.  Yes/no questions are recognised in English,
German and French, questions for a year or a number also in Spanish; a
question in another language is left as the model answered it.
A yes/no SELECT without rows is never turned into "no": an empty result is
not evidence.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal

from agent import rewrites
from agent.kb.base import QueryResult

Form = Literal["yes_no", "year", "count"]
#: The end-of-run step each form is counted under.
STEP_NAMES: dict[Form, str] = {"yes_no": "ask", "year": "year", "count": "count"}

_YES_NO = re.compile(
    r"^\s*(?:(?:is|are|was|were|am|do|does|did|has|have|had|can|could|will|would|should|shall|may|might|must"
    r"|ist|sind|war|waren|hat|haben|hatte|hatten|gibt|gab|kann|können|wurde|wurden|wird|werden"
    r")\b|est-ce\s+qu)", re.IGNORECASE)
_ALTERNATIVE = re.compile(r"\b(?:or|oder|ou)\b", re.IGNORECASE)
#: A comparison: a SELECT that shows both sides has rows whichever side is larger.
_COMPARISON = re.compile(r"\bthan\b|\w+er\s+als\b|\b(?:plus|moins)\s+\w+\s+que\b", re.IGNORECASE)
_REQUEST = re.compile(
    r"^\s*(?:(?:can|could|would|will)\s+(?:you|someone|somebody|anyone|anybody|one|i|we)\b"
    r"|(?:is|would)\s+(?:it|this|that)\s+(?:be\s+)?possible\b|is\s+there\s+(?:a|any)\s+(?:way|query|tool|method)\b"
    r"|(?:do|does)\s+(?:you|someone|somebody|anyone|anybody)\b"
    r"|(?:kann|könnte)\s+(?:mir\s+)?(?:jemand|man|ich)\b|gibt\s+es\s+eine\s+(?:möglichkeit|abfrage)\b)",
    re.IGNORECASE)
_OPENING = r"^\s*(?:(?:in|with|for|from|of|at|by|to|on|an|mit|aus|von|en|de|con|desde)\s+)?"
_YEAR = re.compile(_OPENING + r"(?:(?:what|which)\s+year|welchem\s+jahr|welches\s+jahr|quelle\s+année|qué\s+año)\b",
                   re.IGNORECASE)
_COUNT = re.compile(_OPENING + r"(?:how\s+many|wie\s+viele|combien|cuánt[oa]s)\b", re.IGNORECASE)
#: A count per group ("how many … each year") wants one number per group, not one number.
_PER_GROUP = re.compile(r"\b(?:each|per|every|grouped|group|respectively|jede[nmrs]?|pro|chaque|par|cada|por)\b",
                        re.IGNORECASE)
_DATE_TIME = "http://www.w3.org/2001/XMLSchema#dateTime"


def question_form(question: str) -> Form | None:
    """The form of answer *question* asks for, when it is one line whose wording says so plainly."""
    if "\n" in question.strip() or _REQUEST.match(question):
        return None
    if _YES_NO.match(question):
        return None if _ALTERNATIVE.search(question) or _COMPARISON.search(question) else "yes_no"
    if _YEAR.match(question):
        return "year"
    if _COUNT.match(question) and not _PER_GROUP.search(question):
        return "count"
    return None


def step_name(question: str) -> str:
    """The name the end of a run counts the rewrite for *question* under (``form`` when it asks for none)."""
    form = question_form(question)
    return STEP_NAMES[form] if form is not None else "form"


def _full_columns(sparql: str, result: QueryResult, accepts: Callable[[dict[str, str]], bool]) -> list[str]:
    """The projected variables bound in every row of *result* to a term that *accepts* takes."""
    return [name for name in rewrites.projected_variables(sparql)
            if all(name in row and accepts(row[name]) for row in result.bindings)]


def fit_to_question(sparql: str, result: QueryResult | None, question: str) -> str:
    """*sparql* rewritten to answer in the form *question* asks for; unchanged when it already does or cannot.

    *result* is what the final query returned before the end-of-run
    rewrites; they only add columns, rows and ``DISTINCT``, so its columns
    still say which variable holds what.
    """
    if result is None or result.status != "ok" or result.boolean is not None or not result.bindings:
        return sparql
    form = question_form(question)
    if form == "yes_no":
        return rewrites.to_ask(sparql)
    if form == "year":
        dates = _full_columns(sparql, result, lambda term: term.get("datatype") == _DATE_TIME)
        return rewrites.to_year(sparql, dates[0]) if len(dates) == 1 else sparql
    if form == "count" and len(result.bindings) > 1:
        items = _full_columns(sparql, result, lambda term: term.get("type") == "uri")
        if items:
            return rewrites.to_count(sparql, items[0])
    return sparql
