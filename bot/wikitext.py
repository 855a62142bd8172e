"""Wikitext from untrusted text: encoded, never wrapped.

Text from the model, from Wikidata or from the asker reaches a reply only
through :func:`encode`: every character that wikitext, the preprocessor or
the pre-save transform can act on is spelt as an HTML entity, control
characters are removed and line breaks become ``<br>``, so the text can start
no tag, strip marker, link, template, signature, list, heading or table,
whatever it holds.  No ``<nowiki>``, ``<pre>`` or ``<syntaxhighlight>`` is
trusted with it: a wrapper is only as safe as the parser's least-known
feature (strip markers, ``</pre >`` with a space).

The final query is the one exception that keeps its own text: it goes into
``{{SPARQL|query=…}}`` (syntax colouring and the query service's "Try it!"
link) only when :func:`fits_sparql_template` proves that the template shows
and links it exactly as written; otherwise :func:`query_block` shows it
entity-encoded and :func:`query_service_link` links it, percent-encoded.
"""

from __future__ import annotations

import re
import unicodedata

from agent.sparql_lexer import tokenize

QUERY_SERVICE = "https://query.wikidata.org/#"

#: Characters that can start markup somewhere in wikitext.
_SIGNIFICANT = frozenset("&<>[]{}|~'=_:*#;!-\"")
#: MediaWiki's French spacing (``Sanitizer::armorFrenchSpaces``) turns a space before ``? % » ›`` (not followed
#: by a word character) or after ``« ‹`` into a non-breaking one; the character is spelt then, so the text
#: read or copied from the page keeps its plain space.
_AFTER_SPACE = frozenset("?%»›")
_BEFORE_SPACE = frozenset("«‹")
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\u0085\u2028\u2029]")
#: Words that start a magic link (``ISBN 123…``) on wikis that still enable them.
_MAGIC_LINK = re.compile(r"\b(?=ISBN|RFC|PMID)")

#: Sequences the preprocessor or the pre-save transform acts on inside a template argument.
_TEMPLATE_UNSAFE = re.compile(
    r"\{\{|\}\}|\[\[|~~|__\w+__|<!|&[#A-Za-z0-9]+;"
    r"|</?[A-Za-z][A-Za-z0-9_-]*(?=[\s/>]|$)"  # an extension tag (<ref>, </pre >, <includeonly>)
    r"|[{}]\||\|[{}]"  # a bar next to a brace: its {{!}} would join the brace
    r"|(?:^|\n)="  # a heading or an argument's name
)


def _dropped(char: str) -> bool:
    """Characters a page cannot show or MediaWiki would rewrite at save time: controls, surrogates,
    format characters (bidi overrides) and noncharacters."""
    category = unicodedata.category(char)
    code = ord(char)
    return (category in ("Cc", "Cs", "Cf") and char not in "\t\n") or (0xFDD0 <= code <= 0xFDEF) \
        or (code & 0xFFFE) == 0xFFFE


def encode(text: str) -> str:
    """*text* as inert wikitext on one line: entities for markup characters, ``<br>`` for line breaks."""
    text = "".join(char for char in _LINE_BREAKS.sub("\n", str(text)) if not _dropped(char))
    text = unicodedata.normalize("NFC", text)
    magic = {match.start() for match in _MAGIC_LINK.finditer(text)}
    out = []
    for index, char in enumerate(text):
        before = text[index - 1] if index else "\n"
        after = text[index + 1] if index + 1 < len(text) else "\n"
        if char == "\n":
            out.append("<br>")
        elif char == "&":
            out.append("&amp;")
        elif (char in _SIGNIFICANT or index in magic or (char in " \t" and before == "\n")
              or (char in _AFTER_SPACE and before == " " and not (after.isalnum() or after == "_"))
              or (char in _BEFORE_SPACE and after == " ")):
            out.append(f"&#{ord(char)};")
        else:
            out.append(char)
    return "".join(out)


def inline(text: str, limit: int | None = None) -> str:
    """One line of untrusted text, white space folded, cut at *limit* characters."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return encode(text)


def code_block(text: str, limit: int | None = None) -> str:
    """Untrusted text over several lines (an observation, a query of the trace) as a monospace block
    (``<code>``, which the skins shade, shown as a block with its spaces kept)."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " …"
    return f'<code style="display:block;white-space:pre-wrap">{encode(text)}</code>'


def fits_sparql_template(query: str) -> bool:
    """Whether ``{{SPARQL|query=…}}`` shows and links *query* exactly as written.

    The template trims its argument and MediaWiki stores NFC text without
    carriage returns or control characters; inside the argument the
    preprocessor acts on ``{{``, ``}}``, ``[[`` (an unclosed one hides the
    template's end), bars, tags, comments, signatures and headings, and a
    ``__WORD__`` would become a behaviour switch in the link (a lone ``]]``
    or ``__`` is plain text there).
    A bar alone is written as ``{{!}}``, which expands back to ``|``.
    """
    return (bool(query) and query == query.strip() and unicodedata.is_normalized("NFC", query)
            and not any(_dropped(char) or char in "\r\u0085\u2028\u2029" for char in query)
            and _TEMPLATE_UNSAFE.search(query) is None)


def sparql_template(query: str) -> str:
    """``{{SPARQL|query=…}}`` for a query :func:`fits_sparql_template` accepts."""
    if not fits_sparql_template(query):
        raise ValueError("this query holds wikitext the {{SPARQL}} template would act on; use query_block")
    # The line break keeps a closing brace of the query apart from the template's (the argument is trimmed).
    return "{{SPARQL|query=" + query.replace("|", "{{!}}") + "\n}}"


def query_service_link(query: str) -> str:
    """The query service URL that opens *query* exactly: every byte but letters and digits percent-encoded,
    so the URL holds no wikitext (not even ``~~~`` or ``__``)."""
    data = query.encode("utf-8", "surrogatepass")
    return QUERY_SERVICE + "".join(chr(byte) if chr(byte).isascii() and chr(byte).isalnum() else f"%{byte:02X}"
                                   for byte in data)


_COLOURS = {"word": "#1a1aa6", "var": "#0b7f70", "string": "#a31515", "comment": "#6a737d", "iri": "#6f42c1",
            "pname": "#6f42c1", "langtag": "#a31515", "number": "#098658"}


def query_block(query: str) -> str:
    """A query shown entity-encoded, coloured by its tokens (for queries the template cannot hold)."""
    pieces = []
    for token in tokenize(query):
        text = encode(token.text)
        colour = _COLOURS.get(token.kind)
        pieces.append(f'<span style="color:{colour}">{text}</span>' if colour and text else text)
    return ('<div class="spinach-query" style="font-family:monospace;white-space:pre-wrap;padding:0.5em;'
            'border:1px solid #c8ccd1;background:#f8f9fa">' + "".join(pieces) + "</div>")
