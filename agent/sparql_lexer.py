"""The one SPARQL 1.1 tokenizer of the project, lossless and total.

Everything that must know where a SPARQL literal, IRI, comment or local name
begins and ends (the bot's safe rendering, the syntax colouring of a query
shown on a wiki page, query rewriting for other dialects) reads the tokens of
:func:`tokenize`, so the answer is the same everywhere.

The terminals follow the SPARQL 1.1 grammar (section 19.8): ``IRIREF``,
``PNAME_NS``/``PNAME_LN`` with ``PLX`` (``%XX`` and ``PN_LOCAL_ESC`` such as
``ex:it\\'s``), ``VAR1``/``VAR2``, ``BLANK_NODE_LABEL``, the four string forms
with their escapes, ``LANGTAG`` and the numbers; the query service's named
subqueries (``WITH { … } AS %name``, ``INCLUDE %name``) give ``%name`` words.
A ``<`` that does not open a well-formed ``IRIREF`` is the less-than operator.  Text that is no SPARQL at
all comes out as ``unknown`` tokens, one character each (an unterminated
string: its opening quote), so the tokenizer never raises and joining the
token texts always gives back the input exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The kinds a token can have.
KINDS = ("iri", "pname", "var", "string", "langtag", "number", "comment", "space", "word", "bnode", "punct",
         "unknown")

_PN_CHARS_BASE = ("A-Za-z\u00C0-\u00D6\u00D8-\u00F6\u00F8-\u02FF\u0370-\u037D\u037F-\u1FFF\u200C-\u200D"
                  "\u2070-\u218F\u2C00-\u2FEF\u3001-\uD7FF\uF900-\uFDCF\uFDF0-\uFFFD\U00010000-\U000EFFFF")
_PN_CHARS_U = _PN_CHARS_BASE + "_"
_PN_CHARS = _PN_CHARS_U + "\\-0-9\u00B7\u0300-\u036F\u203F-\u2040"
_PLX = r"(?:%[0-9A-Fa-f]{2}|\\[_~.\-!$&'()*+,;=/?#@%])"
#: PN_PREFIX, matched possessively: a prefix runs up to its colon, and may not end with a dot.
_PN_PREFIX = f"[{_PN_CHARS_BASE}](?:[{_PN_CHARS}.]*+(?<!\\.))?"
_PN_LOCAL = (f"(?:[{_PN_CHARS_U}:0-9]|{_PLX})"
             f"(?:(?:[{_PN_CHARS}.:]|{_PLX})*(?:[{_PN_CHARS}:]|{_PLX}))?")
_EXPONENT = r"[eE][+-]?[0-9]+"

_PNAME = re.compile(f"(?:{_PN_PREFIX})?:(?:{_PN_LOCAL})?")
_PNAME_START = re.compile(f"[{_PN_CHARS_BASE}:]")
_NAME_RUN = re.compile(f"[{_PN_CHARS_BASE}][{_PN_CHARS}.]*+")

_TOKEN = re.compile("|".join((
    r"(?P<space>[ \t\r\n]+)",
    r"(?P<comment>#[^\r\n]*)",
    r"(?P<iri><[^<>\"{}|^`\\\x00-\x20]*>)",
    r"(?P<string>"
    r'"""(?:[^"\\]|\\.|"(?!""))*"""'
    r"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    r'|"(?:[^"\\\r\n]|\\[^\r\n])*"'
    r"|'(?:[^'\\\r\n]|\\[^\r\n])*')",
    f"(?P<var>[?$][{_PN_CHARS_U}0-9][{_PN_CHARS_U}0-9\u00B7\u0300-\u036F\u203F-\u2040]*)",
    f"(?P<bnode>_:[{_PN_CHARS_U}0-9](?:[{_PN_CHARS}.]*[{_PN_CHARS}])?)",
    r"(?P<word>%?[A-Za-z_][A-Za-z0-9_]*)",
    f"(?P<number>[0-9]*\\.[0-9]+(?:{_EXPONENT})?|[0-9]+\\.[0-9]*{_EXPONENT}|[0-9]+(?:{_EXPONENT})?)",
    r"(?P<langtag>@[a-zA-Z]+(?:-[a-zA-Z0-9]+)*)",
    r"(?P<punct>\|\||&&|!=|<=|>=|\^\^|[{}()\[\];,.=<>!+\-*/|^?])",
)), re.DOTALL)


@dataclass(frozen=True, slots=True)
class Token:
    """One token: its kind (one of :data:`KINDS`), its exact text and where it starts in the query."""

    kind: str
    text: str
    start: int


def tokenize(query: str) -> list[Token]:
    """The tokens of *query*, in order; their texts joined give *query* back exactly.  Never raises."""
    tokens: list[Token] = []
    position = 0
    no_prefix_before = 0  # a run of name characters seen not to end in a prefix's colon
    while position < len(query):
        if position >= no_prefix_before and _PNAME_START.match(query, position):
            match = _PNAME.match(query, position)
            if match is not None:
                tokens.append(Token("pname", match.group(0), position))
                position = match.end()
                continue
            # No later start inside this run can end in a colon either: skip them (linear time on
            # ``a.a.a.…``, which would otherwise be scanned again from every letter).
            no_prefix_before = _NAME_RUN.match(query, position).end()
        match = _TOKEN.match(query, position)
        if match is None:
            tokens.append(Token("unknown", query[position], position))
            position += 1
            continue
        tokens.append(Token(match.lastgroup or "unknown", match.group(0), position))
        position = match.end()
    return tokens
