"""Upstream SPINACH's post-processing of a final query: a separate, labelled figure, never the agent's answer.

The paper's figures were scored after deterministic steps that upstream's
code applies to the final query: its agent drops a trailing ``LIMIT 10``
from the query it stops on, and its evaluation script (``post_processing``
with ``regex_use_select_distinct_and_id_not_label``) then

1. turns every ``SELECT`` into ``SELECT DISTINCT`` (subqueries too), unless
   the query already holds a ``SELECT DISTINCT``;
2. puts ``?x`` in front of the first ``SELECT DISTINCT … WHERE`` projection
   for every ``?xLabel`` projected there without its ``?x``.

Our agent answers with the query its model wrote, and the bot posts that
query.  The harness scores this rewrite of it beside the agent's own figure,
labelled "with upstream's post-processing", to compare with the paper like
with like.  The steps are made on the tokens of the one SPARQL lexer, so a
``SELECT`` inside a string or a comment is left alone where upstream's text
replacement would have changed it; keywords are matched whatever their case.
"""

from __future__ import annotations

from agent.sparql_lexer import Token, tokenize

#: What the figure made with these steps is called wherever it is shown.
LABEL = "with upstream's post-processing"


def _significant(tokens: list[Token]) -> list[int]:
    return [index for index, token in enumerate(tokens) if token.kind not in ("space", "comment")]


def _is_word(token: Token, word: str) -> bool:
    return token.kind == "word" and token.text.upper() == word


def drop_limit_10(sparql: str) -> str:
    """The query without a final ``LIMIT 10`` (upstream's agent drops it from the query it stops on)."""
    tokens = tokenize(sparql.rstrip())
    significant = _significant(tokens)
    if len(significant) < 2 or significant[-1] != len(tokens) - 1:
        return sparql
    limit, number = tokens[significant[-2]], tokens[significant[-1]]
    if not (_is_word(limit, "LIMIT") and number.text == "10"):
        return sparql
    return sparql[:limit.start]


def select_distinct(sparql: str) -> str:
    """Every ``SELECT`` as ``SELECT DISTINCT``, unless one ``SELECT DISTINCT`` is there already."""
    tokens = tokenize(sparql)
    significant = _significant(tokens)
    selects = [position for position, index in enumerate(significant) if _is_word(tokens[index], "SELECT")]
    if any(position + 1 < len(significant) and _is_word(tokens[significant[position + 1]], "DISTINCT")
           for position in selects):
        return sparql
    pieces, chosen = [], {significant[position] for position in selects}
    for index, token in enumerate(tokens):
        pieces.append(token.text + (" DISTINCT" if index in chosen else ""))
    return "".join(pieces)


def ids_before_labels(sparql: str) -> str:
    """``?x`` put in front of the first ``SELECT DISTINCT`` projection for each ``?xLabel`` there without it."""
    tokens = tokenize(sparql)
    significant = _significant(tokens)
    for position, index in enumerate(significant[:-1]):
        if _is_word(tokens[index], "SELECT") and _is_word(tokens[significant[position + 1]], "DISTINCT"):
            clause = []
            for following in significant[position + 2:]:
                if _is_word(tokens[following], "WHERE"):
                    break
                if tokens[following].text == "{":
                    return sparql  # no WHERE before the group: upstream's pattern does not match
                clause.append(tokens[following])
            else:
                return sparql
            if not clause:
                return sparql
            names = [token.text[1:] for token in clause if token.kind == "var"]
            needed = [f"?{name[:-5]}" for name in names
                      if name.endswith("Label") and len(name) > 5 and name[:-5] not in names]
            if not needed:
                return sparql
            start = clause[0].start
            return sparql[:start] + " ".join(needed) + " " + sparql[start:]
    return sparql


def postprocess(sparql: str, stopped: bool) -> str:
    """*sparql* as upstream would have scored it; *stopped*: the model stopped on it (not an end-of-run choice)."""
    if stopped:
        sparql = drop_limit_10(sparql)
    return ids_before_labels(select_distinct(sparql))
