"""What an example's query says, read from its tokens: the properties it uses, and its form for a prompt.

Both read the tokens of the project's one SPARQL lexer, so a property named
in a comment or a string is no property, and the prompt's form of a query is
the same query: only comments, white space and the query service's own
prefix declarations change.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache

from agent.graph import ANY_ID_RE, ENTITY_ID_RE, ITEM_ID_RE, PROPERTY_ID_RE
from agent.kb.dialect import PREFIXES
from agent.observations import shorten_iri
from agent.sparql_lexer import Token, tokenize

_PROPERTY = PROPERTY_ID_RE
#: Punctuation a space next to adds nothing for a reader (a dot keeps the space after it: ``wd:Q5.x`` would be
#: one name).
_TIGHT = frozenset("{}(),;")
_ELLIPSIS = "…"


def query_properties(sparql: str) -> set[str]:
    """The property IDs *sparql* uses, in any namespace (``wdt:P57``, ``pq:P580``, a full IRI), as ``P57``."""
    return set(_properties(sparql))


def properties_in_order(sparql: str) -> list[str]:
    """:func:`query_properties` in the order *sparql* first names them."""
    return list(_properties(sparql))


@lru_cache(maxsize=4096)
def _properties(sparql: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for token in tokenize(sparql):
        if token.kind == "pname":
            local = token.text.split(":", 1)[1]
        elif token.kind == "iri" and "wikidata.org/" in token.text:
            local = re.split(r"[/#]", token.text[1:-1])[-1]
        else:
            continue
        if _PROPERTY.fullmatch(local):
            found.setdefault(local)
    return tuple(found)


def _without_declared_prefixes(tokens: list[Token]) -> list[Token]:
    """*tokens* without the ``PREFIX`` declarations the query service makes itself (same name, same IRI)."""
    kept, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind == "word" and token.text.upper() == "PREFIX":
            following = [other for other in tokens[index + 1:index + 6] if other.kind != "space"][:2]
            if len(following) == 2 and following[0].kind == "pname" and following[1].kind == "iri" \
                    and PREFIXES.get(following[0].text[:-1]) == following[1].text[1:-1]:
                index = tokens.index(following[1], index) + 1
                continue
        kept.append(token)
        index += 1
    return kept


def _spelt(token: Token) -> str:
    """An IRI token with the query service's prefix where the prefixed name reads as one name; others as written."""
    if token.kind != "iri":
        return token.text
    short = shorten_iri(token.text[1:-1])
    if _PROPERTY.fullmatch(short) or ITEM_ID_RE.fullmatch(short):
        short = f"wd:{short}"
    if short == token.text[1:-1] or [(other.kind, other.text) for other in tokenize(short)] != [("pname", short)]:
        return token.text
    return short


def whole_query(sparql: str) -> str | None:
    """*sparql* as the prompt shows it: the same query, in fewer characters; ``None`` for text that is no query
    the lexer can read whole (a quote never closed).

    Comments go, white space shrinks to single spaces (none beside braces,
    brackets, commas and semicolons), Wikidata IRIs take the prefixes the
    query service declares, and declarations of those prefixes go.  Nothing
    else changes (variable names, the label service, every clause), so the
    query runs as it was posted.
    """
    tokens = _without_declared_prefixes([token for token in tokenize(sparql) if token.kind != "comment"])
    pieces = _pieces(tokens)
    if not pieces or [token.text for token in tokenize("".join(pieces)) if token.kind != "space"] != [
            piece for piece in pieces if not piece.isspace()]:
        return None
    return "".join(pieces)


def _pieces(tokens: list[Token]) -> list[str]:
    """The tokens as they are shown: IRIs prefixed, white space one space or none."""
    pieces: list[str] = []
    for index, token in enumerate(tokens):
        if token.kind == "space":
            after = next((other.text for other in tokens[index + 1:] if other.kind != "space"), "}")
            if pieces and pieces[-1] not in _TIGHT and pieces[-1] != " " and after not in _TIGHT and after != ".":
                pieces.append(" ")
            continue
        pieces.append(_spelt(token))
    while pieces and pieces[-1].isspace():
        pieces.pop()
    return pieces


def shorten_text(text: str, limit: int) -> str:
    """*text* on one line within *limit* characters, cut after a word where one ends late enough (``…`` marks
    a cut)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    kept = text[:max(limit - len(_ELLIPSIS), 0)]
    space = kept.rfind(" ")
    if space > limit // 2:
        kept = kept[:space]
    return kept.rstrip() + _ELLIPSIS


#: What a Wikidata name must look like after each prefix (an item, property, lexeme or media file after ``wd:``;
#: a property after the prefixes of statements, qualifiers, references and direct claims).
_ENTITY = ANY_ID_RE
_ID_SHAPES: dict[str, re.Pattern[str]] = {
    PREFIXES["wd"]: _ENTITY,
    **{PREFIXES[prefix]: _PROPERTY for prefix in ("wdt", "wdtn", "wdno", "p", "ps", "psv", "psn", "pq", "pqv", "pqn",
                                                  "pr", "prv", "prn")},
}


def query_problem(sparql: str, prefixes: dict[str, str] | None = PREFIXES) -> str | None:
    """Why *sparql* is no query to show as an example, in a few words; ``None`` for a query that parses and names
    well-formed Wikidata IDs.

    *prefixes* are those its graph declares for every query (the query service's for Wikidata, a profile's
    for another graph); ``None`` when they are not known (a graph with no shipped profile): then the query is
    read by the lexer alone, since a parse would refuse it for prefixes its graph declares.

    A query must read whole with the project's lexer (every quote and bracket closed) and parse with
    pyoxigraph's SPARQL 1.1 parser, the query service's prefixes declared for it; one using the query service's
    named subqueries (``WITH { … } AS %name``), which SPARQL 1.1 does not have, is read by the lexer alone.  A
    name in a Wikidata namespace must have its shape: ``wd:183`` or ``wdt:Q5`` is a typo a reader would copy.
    """
    everything = tokenize(sparql)
    tokens = [token for token in everything if token.kind not in ("space", "comment")]
    if not tokens:
        return "no query"
    unknown = next((token.text for token in tokens if token.kind == "unknown"), None)
    if unknown is not None:
        return f"unreadable at {unknown!r} (a quote or IRI never closed)"
    depth = 0
    for token in tokens:
        depth += {"{": 1, "(": 1, "[": 1, "}": -1, ")": -1, "]": -1}.get(token.text, 0) if token.kind == "punct" \
            else 0
        if depth < 0:
            return f"a {token.text!r} closes nothing"
    if depth:
        return "a bracket is never closed"
    malformed = _malformed_id(sparql, tokens, prefixes or {})
    if malformed:
        return f"malformed Wikidata ID {malformed}"
    if prefixes is None or any(token.kind == "word" and token.text.startswith("%") for token in tokens):
        return None
    return _parse_problem(everything, tuple(prefixes.items()))


def _wikidata_names(sparql: str, tokens: list[Token], prefixes: dict[str, str]) -> Iterator[tuple[Token, str, str]]:
    """Each name *tokens* spell in a Wikidata namespace (a prefixed name or a full IRI, declarations aside): its
    token, namespace and local part."""
    declared = {match[1]: match[2] for match in re.finditer(r"\bPREFIX\s+([\w.-]*):\s*<([^>]*)>", sparql,
                                                            re.IGNORECASE)}
    for index, token in enumerate(tokens):
        if token.kind == "pname":
            if index and tokens[index - 1].kind == "word" and tokens[index - 1].text.upper() == "PREFIX":
                continue
            prefix, local = token.text.split(":", 1)
            namespace = declared.get(prefix, prefixes.get(prefix, ""))
        elif token.kind == "iri":
            if index > 1 and tokens[index - 1].kind == "pname" and tokens[index - 2].text.upper() == "PREFIX":
                continue
            iri = token.text[1:-1]
            namespace = max((space for space in _ID_SHAPES if iri.startswith(space)), key=len, default="")
            local = iri[len(namespace):]
        else:
            continue
        if namespace in _ID_SHAPES:
            yield token, namespace, local


def _malformed_id(sparql: str, tokens: list[Token], prefixes: dict[str, str]) -> str | None:
    return next((token.text for token, namespace, local in _wikidata_names(sparql, tokens, prefixes)
                 if not _ID_SHAPES[namespace].fullmatch(local)), None)


def query_entities(sparql: str, prefixes: dict[str, str] | None = PREFIXES) -> set[str]:
    """The Wikidata items and properties *sparql* names, in any Wikidata namespace (``wd:Q5``, ``wdt:P31``,
    ``pq:P580``, a full IRI), as ``Q5``, ``P31``: what must exist for the query to mean what it says."""
    tokens = [token for token in tokenize(sparql) if token.kind not in ("space", "comment")]
    return {local for _, _, local in _wikidata_names(sparql, tokens, prefixes or {}) if ENTITY_ID_RE.fullmatch(local)}


def _parse_problem(tokens: list[Token], prefixes: tuple[tuple[str, str], ...]) -> str | None:
    """pyoxigraph's parse error for the query of *tokens*, or ``None``.  The query is parsed, never run: an
    ``ASK`` is read as the ``SELECT *`` of the same pattern (pyoxigraph runs an ASK at once, and a ``SERVICE`` in
    it would call out), and the solutions of the others are never read."""
    import pyoxigraph

    pieces = [token.text for token in tokens]
    form = next((index for index, token in enumerate(tokens) if token.kind == "word" and token.text.upper() in (
        "SELECT", "ASK", "CONSTRUCT", "DESCRIBE")), None)
    if form is not None and pieces[form].upper() == "ASK":
        pieces[form] = "SELECT *"
    try:
        _empty_store(pyoxigraph).query(_prologue(prefixes) + "".join(pieces))  # the query's own declarations come later
    except SyntaxError as error:
        message = re.sub(r"^error at [0-9:]+:\s*", "", " ".join(str(error).split()))  # lines of ours, not its
        return f"does not parse ({message[:120]})"
    except (OSError, RuntimeError, ValueError):
        return None  # parsed, and the engine refused to start it: not a syntax problem
    return None


@lru_cache(maxsize=8)
def _prologue(prefixes: tuple[tuple[str, str], ...]) -> str:
    """The graph's prefixes (the query service's for Wikidata), declared on one line before a query is parsed."""
    return "".join(f"PREFIX {prefix}: <{iri}> " for prefix, iri in prefixes) + "\n"


@lru_cache(maxsize=1)
def _empty_store(pyoxigraph) -> "pyoxigraph.Store":  # noqa: F821 (imported when first needed)
    """One empty in-memory store to parse with (made once: a store is not free to make)."""
    return pyoxigraph.Store()
