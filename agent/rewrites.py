"""Rewrites of a final query that keep every other byte of it.

Three habits of the agent cost the asker: a final query that projects
``?xLabel`` but not ``?x`` gives names where the question wants the entities
(and a bare name cannot be followed to its item), a query that ends in the
``LIMIT 10`` the agent used while checking shows ten rows of a longer answer,
and a query without ``DISTINCT`` repeats a row once per matching statement
(a show with two start dates is listed twice).  Three more rewrites give an
answer the form its question asks for (:mod:`agent.answer_form` decides when):
``ASK`` over the same pattern, a date's year, the number of listed items.
All are made on the token stream of the one SPARQL lexer, so strings, IRIs
and comments can never be mistaken for syntax, and the text outside the edit
stays exactly as the model wrote it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.sparql_lexer import Token, tokenize

#: A trailing LIMIT at least this large is taken for an exploratory one, unless the question names it.
EXPLORATORY_LIMIT = 5
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                 "sixteen seventeen eighteen nineteen twenty").split()


def _significant(tokens: list[Token]) -> list[int]:
    return [index for index, token in enumerate(tokens) if token.kind not in ("space", "comment")]


def _projection(tokens: list[Token]) -> tuple[int, int] | None:
    """Token indices [start, end) of the outermost SELECT's projection, or ``None`` (no SELECT, ``SELECT *``)."""
    depth = 0
    for index, token in enumerate(tokens):
        if token.kind == "punct" and token.text == "{":
            depth += 1
        elif token.kind == "punct" and token.text == "}":
            depth -= 1
        elif token.kind == "word" and token.text.upper() == "SELECT" and depth == 0:
            start = index + 1
            end, parentheses = start, 0
            while end < len(tokens):
                current = tokens[end]
                if current.kind == "word" and current.text.upper() in ("WHERE", "FROM"):
                    break
                if current.kind == "punct":
                    parentheses += {"(": 1, ")": -1}.get(current.text, 0)
                    if current.text == "{":
                        break
                    if current.text == "*" and parentheses == 0:
                        return None
                end += 1
            return start, end
    return None


def projected_variables(sparql: str) -> list[str]:
    """The names the outermost SELECT projects (``?x`` and ``(… AS ?x)``), in order."""
    tokens = tokenize(sparql)
    span = _projection(tokens)
    if span is None:
        return []
    names, depth = [], 0
    previous_word = ""
    for token in tokens[span[0]:span[1]]:
        if token.kind == "punct" and token.text == "(":
            depth += 1
        elif token.kind == "punct" and token.text == ")":
            depth -= 1
        elif token.kind == "var" and (depth == 0 or previous_word == "AS"):
            names.append(token.text[1:])
        if token.kind not in ("space", "comment"):
            previous_word = token.text.upper() if token.kind == "word" else ""
    return names


def add_label_ids(sparql: str) -> str:
    """``?x`` inserted before every projected ``?xLabel`` whose ``?x`` the query binds but does not project."""
    tokens = tokenize(sparql)
    span = _projection(tokens)
    if span is None:
        return sparql
    projected = set(projected_variables(sparql))
    used = {token.text[1:] for token in tokens[span[1]:] if token.kind == "var"}
    pieces: list[str] = []
    depth = 0
    for index, token in enumerate(tokens):
        if span[0] <= index < span[1]:
            if token.kind == "punct" and token.text in "()":
                depth += 1 if token.text == "(" else -1
            name = token.text[1:]
            if (token.kind == "var" and depth == 0 and name.endswith("Label") and name[:-5]
                    and name[:-5] not in projected and name[:-5] in used):
                pieces.append(f"{token.text[0]}{name[:-5]} ")
                projected.add(name[:-5])
        pieces.append(token.text)
    return "".join(pieces)


def add_distinct(sparql: str) -> str:
    """``DISTINCT`` after the outermost ``SELECT`` when it has neither ``DISTINCT`` nor ``REDUCED``.

    Only the outermost projection: there it removes repeated rows and nothing
    else, while in a subquery it could change what an aggregate counts.  An
    aggregate without GROUP BY has one row, which DISTINCT cannot change.
    """
    tokens = tokenize(sparql)
    span = _projection(tokens)
    if span is None:
        return sparql
    parts = query_parts(sparql)
    if parts is not None and parts.aggregates and "GROUP" not in parts.tail_keywords:
        return sparql
    first = next((token for token in tokens[span[0]:span[1]] if token.kind not in ("space", "comment")), None)
    if first is not None and first.kind == "word" and first.text.upper() in ("DISTINCT", "REDUCED"):
        return sparql
    select = tokens[span[0] - 1]
    return sparql[:select.start + len(select.text)] + " DISTINCT" + sparql[select.start + len(select.text):]


def _question_names(question: str, number: int) -> bool:
    words = re.findall(r"[0-9]+|[^\W\d_]+", question.lower())
    return str(number) in words or (number < len(_NUMBER_WORDS) and _NUMBER_WORDS[number] in words)


def drop_exploratory_limit(sparql: str, question: str) -> str:
    """The query without a trailing ``LIMIT n`` (n ≥ 5) that the question does not ask for."""
    tokens = tokenize(sparql)
    significant = _significant(tokens)
    if len(significant) < 2:
        return sparql
    limit, number = tokens[significant[-2]], tokens[significant[-1]]
    if not (limit.kind == "word" and limit.text.upper() == "LIMIT" and number.kind == "number"
            and number.text.isdigit()):
        return sparql
    value = int(number.text)
    if value < EXPLORATORY_LIMIT or _question_names(question, value):
        return sparql
    depth = sum(1 if t.text == "{" else -1 for t in tokens[:significant[-2]] if t.kind == "punct" and t.text in "{}")
    if depth != 0:
        return sparql
    kept = "".join(token.text for token in tokens[:significant[-2]]).rstrip()
    return kept + "".join(token.text for token in tokens[significant[-1] + 1:]).rstrip(" \t")


_AGGREGATES = frozenset({"COUNT", "SUM", "MIN", "MAX", "AVG", "SAMPLE", "GROUP_CONCAT"})


@dataclass(frozen=True)
class QueryParts:
    """The outermost query in pieces whose concatenation is the query, byte for byte.

    ``prologue`` is what comes before the query form (PREFIX and BASE
    declarations, comments), ``form`` the keyword ``SELECT`` or ``ASK`` as
    written, ``projection`` what follows it up to FROM, WHERE or the group,
    ``where`` the FROM clauses and the word WHERE, ``group`` the WHERE group
    with its braces and ``tail`` the rest (solution modifiers, a trailing
    VALUES block).  The rest is read from the tail's tokens, so a comment or
    a string never counts as syntax.
    """

    prologue: str
    form: str
    projection: str
    where: str
    group: str
    tail: str
    #: The upper-cased words of the tail outside any brackets (GROUP, HAVING, ORDER, LIMIT, OFFSET, VALUES).
    tail_keywords: tuple[str, ...]
    #: The number after the tail's LIMIT, if it has one.
    limit: int | None
    #: The tail's trailing VALUES block, from the word VALUES on ("" without one).
    values: str
    #: The projection uses an aggregate (``COUNT`` …), so it has one row per group, not per solution.
    aggregates: bool

    @property
    def head(self) -> str:
        """Everything between the form keyword and the group."""
        return self.projection + self.where


def _matching_brace(tokens: list[Token], open_index: int) -> int | None:
    depth = 0
    for index in range(open_index, len(tokens)):
        token = tokens[index]
        if token.kind == "punct" and token.text in "{}":
            depth += 1 if token.text == "{" else -1
            if depth == 0:
                return index
    return None


def query_parts(sparql: str) -> QueryParts | None:
    """*sparql* split into :class:`QueryParts`, or ``None`` when it is not a SELECT or ASK the lexer can follow."""
    tokens = tokenize(sparql)
    form_index = next((index for index, token in enumerate(tokens)
                       if token.kind == "word" and token.text.upper() in ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")),
                      None)
    if form_index is None or tokens[form_index].text.upper() not in ("SELECT", "ASK"):
        return None
    parentheses, where_index, open_index = 0, None, None
    for index in range(form_index + 1, len(tokens)):
        token = tokens[index]
        if token.kind == "punct" and token.text in "()":
            parentheses += 1 if token.text == "(" else -1
        elif token.kind == "word" and parentheses == 0 and token.text.upper() in ("FROM", "WHERE") \
                and where_index is None:
            where_index = index
        elif token.kind == "punct" and token.text == "{" and parentheses == 0:
            open_index = index
            break
    if open_index is None or (close_index := _matching_brace(tokens, open_index)) is None:
        return None
    where_index = open_index if where_index is None else where_index
    aggregates = any(token.kind == "word" and token.text.upper() in _AGGREGATES
                     for token in tokens[form_index + 1:where_index])
    keywords, nesting, limit, values_index = [], 0, None, None
    significant = [index for index in range(close_index + 1, len(tokens))
                   if tokens[index].kind not in ("space", "comment")]
    for position, index in enumerate(significant):
        token = tokens[index]
        if token.kind == "punct" and token.text in "({[":
            nesting += 1
        elif token.kind == "punct" and token.text in ")}]":
            nesting -= 1
        elif token.kind == "word" and nesting == 0 and token.text.upper() in (
                "GROUP", "HAVING", "ORDER", "LIMIT", "OFFSET", "VALUES"):
            keywords.append(token.text.upper())
            following = tokens[significant[position + 1]] if position + 1 < len(significant) else None
            if token.text.upper() == "LIMIT" and following is not None and following.text.isdigit():
                limit = int(following.text)
            if token.text.upper() == "VALUES":
                values_index = index
    text = [token.text for token in tokens]
    return QueryParts(prologue="".join(text[:form_index]), form=tokens[form_index].text,
                      projection="".join(text[form_index + 1:where_index]), where="".join(text[where_index:open_index]),
                      group="".join(text[open_index:close_index + 1]), tail="".join(text[close_index + 1:]),
                      tail_keywords=tuple(keywords), limit=limit,
                      values="".join(text[values_index:]).rstrip() if values_index is not None else "",
                      aggregates=aggregates)


def _per_solution_select(sparql: str) -> QueryParts | None:
    """The parts of a SELECT whose rows are the WHERE group's solutions, every one of them (no grouping, no OFFSET)."""
    parts = query_parts(sparql)
    if parts is None or parts.form.upper() != "SELECT" or parts.aggregates:
        return None
    if {"GROUP", "HAVING", "OFFSET"} & set(parts.tail_keywords) or parts.limit == 0:
        return None
    return parts


def _where_and_group(parts: QueryParts) -> str:
    """The FROM clauses, WHERE and the group, then the trailing VALUES block: the query without its modifiers."""
    return parts.where + parts.group + ("\n" + parts.values if parts.values else "")


def to_ask(sparql: str) -> str:
    """The SELECT as ``ASK`` over the same WHERE group: true exactly when the SELECT has rows.

    Left unchanged when that equivalence does not hold: an aggregate, GROUP
    BY, HAVING, OFFSET or ``LIMIT 0``.
    """
    parts = _per_solution_select(sparql)
    if parts is None:
        return sparql
    return parts.prologue + "ASK " + _where_and_group(parts)


def _fresh_name(sparql: str, wanted: str) -> str:
    used = {token.text[1:].lower() for token in tokenize(sparql) if token.kind == "var"}
    name, number = wanted, 2
    while name.lower() in used:
        name, number = f"{wanted}{number}", number + 1
    return name


def to_year(sparql: str, variable: str) -> str:
    """The projected ``?variable`` (a date) shown as its year: ``(YEAR(?variable) AS ?variableYear)``."""
    tokens = tokenize(sparql)
    span = _projection(tokens)
    if span is None:
        return sparql
    name = _fresh_name(sparql, f"{variable}Year")
    pieces, depth, replaced = [], 0, False
    for index, token in enumerate(tokens):
        if span[0] <= index < span[1]:
            if token.kind == "punct" and token.text in "()":
                depth += 1 if token.text == "(" else -1
            if token.kind == "var" and depth == 0 and token.text[1:] == variable and not replaced:
                pieces.append(f"(YEAR({token.text}) AS ?{name})")
                replaced = True
                continue
        pieces.append(token.text)
    return "".join(pieces) if replaced else sparql


def to_count(sparql: str, variable: str) -> str:
    """The SELECT as the number of distinct ``?variable`` values it lists: ``(COUNT(DISTINCT ?variable) AS ?count)``.

    Ordering and LIMIT go (a count has one row); left unchanged where the
    rows are not the WHERE group's solutions (aggregates, grouping, OFFSET).
    """
    parts = _per_solution_select(sparql)
    if parts is None or variable not in projected_variables(sparql):
        return sparql
    name = _fresh_name(sparql, "count")
    return parts.prologue + f"{parts.form} (COUNT(DISTINCT ?{variable}) AS ?{name}) " + _where_and_group(parts)
