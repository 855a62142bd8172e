"""The outermost query's parts, read from the tokens of the one SPARQL lexer.

The recorded knowledge base of the upstream replay answers a query the
recorded run never executed when it shares the WHERE group of a known one
(:mod:`harness.recorded_kb`), and upstream's post-processing rewrites a
final query's projection (:mod:`harness.upstream_postprocessing`); both
split a query here, so a string, an IRI or a comment is never taken for
syntax.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.sparql_lexer import Token, tokenize


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
