"""Rewrites of a final query that keep every other byte of it.

Three habits of the agent cost the asker: a final query that projects
``?xLabel`` but not ``?x`` gives names where the question wants the entities
(and a bare name cannot be followed to its item), a query that ends in the
``LIMIT 10`` the agent used while checking shows ten rows of a longer answer,
and a query without ``DISTINCT`` repeats a row once per matching statement
(a show with two start dates is listed twice).  All are fixed on the token stream of the one SPARQL lexer, so
strings, IRIs and comments can never be mistaken for syntax, and the text
outside the edit stays exactly as the model wrote it.
"""

from __future__ import annotations

import re

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
    else, while in a subquery it could change what an aggregate counts.
    """
    tokens = tokenize(sparql)
    span = _projection(tokens)
    if span is None:
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
