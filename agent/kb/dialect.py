"""Queries written for query.wikidata.org, made to run on other SPARQL engines.

The Wikidata Query Service (WDQS) adds to SPARQL 1.1: implicit prefixes,
``SERVICE wikibase:label``, ``hint:`` triples, Blazegraph's named subqueries
and a few services of its own.  Engines that hold Wikidata elsewhere do not
(QLever, any SPARQL 1.1 endpoint, the embedded Oxigraph store), so a query
is prepared for the engine that will answer it:

* ``wdqs``: sent untouched;
* ``qlever`` and ``sparql11``: the WDQS prefixes the query uses are declared;
  every ``SERVICE wikibase:label`` becomes OPTIONAL label patterns with the
  language fallback and the bare ID as last resort, placed at the end of
  the group that held the service (so its place never changes the rows or
  their cost); ``hint:`` triples are dropped; named subqueries are inlined;
  ``wikibase:mwapi``, ``wikibase:around`` and ``wikibase:box`` say "not
  supported" since only WDQS has them.

>>> print(prepare('SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }', "qlever"))
PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX wdt: <http://www.wikidata.org/prop/direct/>
SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }

Structure is found on the tokens of :mod:`agent.sparql_lexer`, so braces,
``#`` and quotes inside IRIs, strings and comments never mislead it.
"""

from __future__ import annotations

import re

from agent.graph import DIALECTS, WIKIDATA
from agent.sparql_lexer import Token, tokenize

#: The prefixes the query service declares for every query: the Wikidata profile's (one table for the
#: project's Wikidata namespaces).
PREFIXES = WIKIDATA.prefixes
ENTITY = PREFIXES["wd"]
#: Services only the query service runs.
WDQS_ONLY = ("wikibase:mwapi", "wikibase:around", "wikibase:box")
_OPAQUE = ("string", "iri", "comment")


class Unsupported(ValueError):
    """A WDQS feature the target engine cannot run, e.g. ``not supported by qlever: SERVICE wikibase:mwapi``."""


def masked(query: str) -> str:
    """*query* with IRIs, literals, comments and escaped local names blanked (same length), for finding structure."""
    return "".join(" " * len(token.text) if token.kind in _OPAQUE or (token.kind == "pname" and "\\" in token.text)
                   else token.text for token in tokenize(query))


def closing_brace(text: str, opening: int) -> int:
    """Index of the ``}`` matching the ``{`` at *opening* in masked *text*."""
    depth = 0
    for index in range(opening, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise SyntaxError("unbalanced braces: a '{' is never closed")


def _enclosing_brace(text: str, position: int) -> int:
    depth = 0
    for index in range(position - 1, -1, -1):
        if text[index] == "}":
            depth += 1
        elif text[index] == "{":
            if depth == 0:
                return index
            depth -= 1
    raise SyntaxError("a SERVICE outside any group")


def inline_named_subqueries(query: str) -> str:
    """Blazegraph's ``WITH { ... } AS %name`` / ``INCLUDE %name`` as plain subqueries."""
    while True:
        text = masked(query)
        match = re.search(r"\bWITH\s*\{", text, re.IGNORECASE)
        if not match:
            return query
        end = closing_brace(text, match.end() - 1)
        name = re.match(r"\s*AS\s+(%\w+)", text[end + 1:], re.IGNORECASE)
        if not name:
            raise SyntaxError("WITH { ... } without AS %name")
        body = query[match.end():end]
        query = query[:match.start()] + query[end + 1 + name.end():]
        query = re.sub(r"\bINCLUDE\s+" + re.escape(name.group(1)) + r"\b", lambda _: "{ " + body + " }", query,
                       flags=re.IGNORECASE)


def drop_hints(query: str) -> str:
    """Remove ``hint:`` triples (Blazegraph optimizer hints; elsewhere they would match nothing)."""
    tokens = tokenize(query)
    significant = [index for index, token in enumerate(tokens) if token.kind not in ("space", "comment")]
    drop: set[int] = set()
    for position, index in enumerate(significant[:-2]):
        if tokens[index].kind == "pname" and tokens[index].text.lower().startswith("hint:") \
                and tokens[significant[position + 1]].text.lower().startswith("hint:"):
            end = position + 2
            if end + 1 < len(significant) and tokens[significant[end + 1]].text == ".":
                end += 1
            drop.update(significant[position:end + 1])
    return "".join(" " if index in drop else token.text for index, token in enumerate(tokens))


# -- the label service -----------------------------------------------------------------------------

_KINDS = {"rdfs:label": "Label", "schema:description": "Description", "skos:altLabel": "AltLabel"}
_PREDICATES = {kind: predicate for predicate, kind in _KINDS.items()}


def _label_patterns(variable: str, output: str, kind: str, languages: list[str]) -> str:
    """Patterns binding ?output as the service would: the first language that has one, else the ID for labels."""
    predicate = _PREDICATES[kind]
    parts, names = [], []
    for index, language in enumerate(languages):
        name = f"?{output}_l{index}"
        names.append(name)
        if kind == "AltLabel":  # every alias of the first language that has any, comma-separated
            parts.append(f"OPTIONAL {{ SELECT ?{variable} (GROUP_CONCAT(?{output}_a{index}; separator=\", \") "
                         f"AS {name}) WHERE {{ ?{variable} {predicate} ?{output}_a{index} "
                         f"FILTER(LANG(?{output}_a{index}) = \"{language}\") }} GROUP BY ?{variable} }}")
        else:
            parts.append(f"OPTIONAL {{ ?{variable} {predicate} {name} FILTER(LANG({name}) = \"{language}\") }}")
    if kind == "Label":
        names.append(f"IF(isIRI(?{variable}) && STRSTARTS(STR(?{variable}), \"{ENTITY}\"), "
                     f"STRAFTER(STR(?{variable}), \"{ENTITY}\"), STR(?{variable}))")
    parts.append(f"BIND(COALESCE({', '.join(names)}) AS ?{output})")
    return " ".join(parts)


def _languages(inside: list[Token], default: str) -> list[str]:
    significant = [token for token in inside if token.kind not in ("space", "comment")]
    for index, token in enumerate(significant[:-1]):
        if token.text == "wikibase:language" and significant[index + 1].kind == "string":
            literal = significant[index + 1].text
            quote = 3 if literal[:3] in ('"""', "'''") else 1
            found = [part.strip() for part in literal[quote:-quote].split(",")]
            found = [default if part == "[AUTO_LANGUAGE]" else part for part in found if part]
            return found or [default]
    return [default]


def rewrite_label_services(query: str, language: str = "en") -> str:
    """Every ``SERVICE wikibase:label`` as OPTIONAL patterns at the end of the group that holds it."""
    claimed: set[str] = set()
    while True:
        text = masked(query)
        match = re.search(r"(?<![?$\w:])SERVICE\s+(?:wikibase:label|<http://wikiba\.se/ontology#label>)\s*\{", text,
                          re.IGNORECASE)
        if not match:
            return query
        end = closing_brace(text, match.end() - 1)
        group_start = _enclosing_brace(text, match.start())
        group_end = closing_brace(text, group_start)
        inside = tokenize(query[match.end():end])
        languages = _languages(inside, language)
        words = [token.text for token in inside if token.kind not in ("space", "comment")]
        wanted: list[tuple[str, str, str]] = []
        for index in range(len(words) - 2):
            if words[index + 1] in _KINDS and words[index].startswith(("?", "$")) \
                    and words[index + 2].startswith(("?", "$")):
                wanted.append((words[index][1:], words[index + 2][1:], _KINDS[words[index + 1]]))
        if not wanted:  # the automatic form: every ?xLabel, ?xDescription, ?xAltLabel whose ?x the group uses
            rest = query[:match.start()] + query[end + 1:]
            everywhere = {token.text[1:] for token in tokenize(rest) if token.kind == "var"}
            in_group = {token.text[1:] for token in tokenize(query[group_start:match.start()] +
                                                             query[end + 1:group_end]) if token.kind == "var"}
            for name in sorted(everywhere - claimed):
                for kind in ("AltLabel", "Label", "Description"):
                    if name.endswith(kind) and name[:-len(kind)] in in_group:
                        wanted.append((name[:-len(kind)], name, kind))
                        break
        dot = re.match(r"\s*\.", text[end + 1:group_end])  # the service's own "." goes with it
        if dot:
            end += dot.end()
        claimed.update(output for _, output, _ in wanted)
        patterns = " ".join(_label_patterns(variable, output, kind, languages) for variable, output, kind in wanted)
        query = (query[:match.start()] + " " * (end + 1 - match.start()) + query[end + 1:group_end]
                 + " " + patterns + " " + query[group_end:])


def refuse_wdqs_only(query: str, engine: str) -> None:
    """Raise :class:`Unsupported` for the services only the query service has."""
    text = masked(query)
    for feature in WDQS_ONLY:
        found = re.search(r"(SERVICE\s+)?" + re.escape(feature) + r"\b", text, re.IGNORECASE)
        if found:
            name = f"SERVICE {feature}" if found.group(1) else feature
            raise Unsupported(f"not supported {engine}: {name} (only the Wikidata Query Service has it)")


def declare_prefixes(query: str) -> str:
    """The WDQS prefixes *query* uses but does not declare, declared at its top."""
    tokens = tokenize(query)
    declared = {match.group(1).lower() for match in re.finditer(r"\bPREFIX\s+([\w.-]*):", masked(query),
                                                                 re.IGNORECASE)}
    used: list[str] = []
    for token in tokens:
        if token.kind == "pname":
            prefix = token.text.split(":", 1)[0]
            if prefix in PREFIXES and prefix.lower() not in declared and prefix not in used:
                used.append(prefix)
    return "".join(f"PREFIX {prefix}: <{PREFIXES[prefix]}>\n" for prefix in used) + query


#: XML Schema's derived integer types: their constructor functions are XPath's, not SPARQL 1.1's (which
#: casts to xsd:integer, decimal, float, double, string, boolean and dateTime only).
DERIVED_INTEGERS = frozenset(("int", "long", "short", "byte", "nonNegativeInteger", "positiveInteger",
                              "nonPositiveInteger", "negativeInteger", "unsignedLong", "unsignedInt",
                              "unsignedShort", "unsignedByte"))


def integer_casts(query: str) -> str:
    """``xsd:int(?x)`` (and the other derived integer types) as SPARQL 1.1's ``xsd:integer(?x)``.

    Engines that only know SPARQL 1.1's casts (Oxigraph) refuse the XPath
    constructors that Virtuoso and Blazegraph accept, and real query sets use
    them (two of CK25's reference queries sum ``xsd:int(?quantity)``).  The
    value is the same integer; only the range check of the narrower type is lost.
    """
    tokens = tokenize(query)
    xsd = PREFIXES["xsd"]
    declared = {match.group(1): match.group(2) for match in re.finditer(
        r"\bPREFIX\s+([\w.-]*):\s*<([^>]*)>", query, re.IGNORECASE)}
    significant = [index for index, token in enumerate(tokens) if token.kind not in ("space", "comment")]
    out = [token.text for token in tokens]
    for position, index in enumerate(significant[:-1]):
        token = tokens[index]
        if tokens[significant[position + 1]].text != "(":
            continue
        if token.kind == "pname":
            prefix, _, local = token.text.partition(":")
            if local in DERIVED_INTEGERS and declared.get(prefix, PREFIXES.get(prefix)) == xsd:
                out[index] = f"{prefix}:integer"
        elif token.kind == "iri" and token.text[1:-1].removeprefix(xsd) in DERIVED_INTEGERS \
                and token.text[1:].startswith(xsd):
            out[index] = f"<{xsd}integer>"
    return "".join(out)


def emulate_wdqs(query: str, language: str = "en", engine: str = "offline") -> str:
    """*query* without the query service's own additions (prefixes aside)."""
    query = inline_named_subqueries(query)
    query = drop_hints(query)
    query = rewrite_label_services(query, language)
    refuse_wdqs_only(query, engine)
    return query


def prepare(query: str, dialect: str, language: str = "en") -> str:
    """*query* as an engine of *dialect* can run it; :class:`Unsupported` for what it cannot."""
    if dialect not in DIALECTS:
        raise ValueError(f"unknown SPARQL dialect {dialect!r}: choose one of {', '.join(DIALECTS)}")
    if dialect == "wdqs":
        return query
    query = declare_prefixes(emulate_wdqs(query, language, engine=f"by {dialect} endpoints"))
    return integer_casts(query) if dialect == "sparql11" else query
