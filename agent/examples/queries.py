"""What an example's query says, read from its tokens: the properties it uses, and a short form for a prompt.

Both read the tokens of the project's one SPARQL lexer, so a property named
in a comment or a string is no property, and a shortened query is cut
between tokens, never inside one.
"""

from __future__ import annotations

import re
from functools import lru_cache

from agent.observations import shorten_iri
from agent.sparql_lexer import Token, tokenize

_PROPERTY = re.compile(r"P[1-9][0-9]*")
_FORMS = ("SELECT", "ASK", "CONSTRUCT", "DESCRIBE")
_LABEL_SERVICE = ("wikibase:label", "<http://wikiba.se/ontology#label>")
#: Punctuation a space next to adds nothing for a reader (a dot keeps the space after it: ``wd:Q5.x`` would be
#: one name).
_TIGHT = frozenset("{}(),;")
_ELLIPSIS = "…"


def query_properties(sparql: str) -> set[str]:
    """The property IDs *sparql* uses, in any namespace (``wdt:P57``, ``pq:P580``, a full IRI), as ``P57``."""
    return set(_properties(sparql))


@lru_cache(maxsize=4096)
def _properties(sparql: str) -> frozenset[str]:
    found = set()
    for token in tokenize(sparql):
        if token.kind == "pname":
            local = token.text.split(":", 1)[1]
        elif token.kind == "iri" and "wikidata.org/" in token.text:
            local = re.split(r"[/#]", token.text[1:-1])[-1]
        else:
            continue
        if _PROPERTY.fullmatch(local):
            found.add(local)
    return frozenset(found)


def _matching(tokens: list[Token], start: int) -> int:
    """The index of the brace closing the first ``{`` at or after *start* (the last token when unclosed)."""
    depth = 0
    for index in range(start, len(tokens)):
        if tokens[index].text == "{":
            depth += 1
        elif tokens[index].text == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(tokens) - 1


def _without_label_service(tokens: list[Token]) -> list[Token]:
    kept, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        if token.kind == "word" and token.text.upper() == "SERVICE":
            following = next((other for other in tokens[index + 1:] if other.kind != "space"), None)
            if following is not None and following.text in _LABEL_SERVICE:
                index = _matching(tokens, index) + 1
                continue
        kept.append(token)
        index += 1
    return kept


def _spelt(token: Token) -> str:
    if token.kind != "iri":
        return token.text
    short = shorten_iri(token.text[1:-1])
    if short == token.text[1:-1]:
        return token.text
    return f"wd:{short}" if _PROPERTY.fullmatch(short) or re.fullmatch(r"Q[1-9][0-9]*", short) else short


def compact_query(sparql: str, limit: int) -> str:
    """*sparql* in few characters for a prompt, within *limit* characters, cut between tokens (``…`` marks a cut).

    The prologue, comments and the label service go, Wikidata IRIs get
    their usual prefixes, white space shrinks to single spaces (none beside
    braces, brackets, commas and semicolons), and variables are renamed
    ``?a``, ``?b``…  A query without aggregates shows its WHERE group and
    modifiers only: its projection says little the pattern does not.
    """
    tokens = [token for token in tokenize(sparql) if token.kind != "comment"]
    form = next((index for index, token in enumerate(tokens)
                 if token.kind == "word" and token.text.upper() in _FORMS), 0)
    tokens = _without_label_service(tokens[form:])
    group = next((index for index, token in enumerate(tokens) if token.text == "{"), None)
    head = tokens[:group] if group is not None else []
    if group is not None and not any(token.kind == "word" and token.text.upper() in ("COUNT", "SUM", "AVG", "MIN",
                                                                                  "MAX", "SAMPLE", "GROUP_CONCAT")
                                     for token in head):
        tokens = tokens[group:]
    pieces = _pieces(tokens, shrink_space=True)
    if [token.text for token in tokenize("".join(pieces)) if token.kind != "space"] != [
            piece for piece in pieces if not piece.isspace()]:
        # Text the lexer could not read (a quote never closed) can read as a string once white space shrinks
        # (``"5\n"`` is no string, ``"5 "`` is): such a query keeps its white space as written.
        pieces = _pieces(tokens, shrink_space=False)
    text = "".join(pieces)
    if len(text) <= limit:
        return text
    kept, size = [], len(_ELLIPSIS)
    for piece in pieces:
        if size + len(piece) > limit:
            break
        kept.append(piece)
        size += len(piece)
    return "".join(kept).rstrip() + _ELLIPSIS


def _pieces(tokens: list[Token], *, shrink_space: bool) -> list[str]:
    """The tokens as they are shown: variables renamed, IRIs prefixed, white space one space or none (with
    *shrink_space*) or as written."""
    names: dict[str, str] = {}
    pieces: list[str] = []
    for index, token in enumerate(tokens):
        if token.kind == "space":
            if not shrink_space:
                pieces.append(token.text)
                continue
            after = next((other.text for other in tokens[index + 1:] if other.kind != "space"), "}")
            if pieces and pieces[-1] not in _TIGHT and pieces[-1] != " " and after not in _TIGHT and after != ".":
                pieces.append(" ")
            continue
        if token.kind == "var":
            if token.text[1:] not in names:
                names[token.text[1:]] = _short_name(len(names))
            pieces.append("?" + names[token.text[1:]])
            continue
        pieces.append(_spelt(token))
    while pieces and pieces[-1].isspace():
        pieces.pop()
    return pieces


def _short_name(number: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[number] if number < len(letters) else f"v{number}"


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
