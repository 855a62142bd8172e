"""Wikitext from untrusted text: inert by construction, escaped only where MediaWiki would read markup.

Text from the model, from Wikidata or from the asker reaches a reply in one
of two ways, and both are written so that a regular reading the page's
source reads the text itself, not a wall of entities:

* :func:`encode` (a line of prose, a table cell): the text is never at the
  start of a line (the reply's ``:`` or a cell's ``|`` comes first), so list,
  heading and table characters are plain there; what MediaWiki reads as
  markup in the middle of a line is spelt as an entity: ``<`` before a tag
  name, ``&`` before an entity name, every ``[``, braces next to a brace, a
  bar or a hyphen (templates, tables, language conversion), the third ``~``
  of a signature, the second ``'`` of bold or italics, the second ``_`` of a
  behaviour switch, the colon after a URL scheme (a free link) and the first
  letter of a magic link; a bar only inside a table cell.
* :func:`text_block` (several lines: the steps of the trace, a query the
  ``{{SPARQL}}`` template cannot hold): each line as :func:`encode` writes
  it, in a ``<div class="mw-code">`` (the skins' code block, which keeps
  spaces and wraps long lines), the lines joined by ``<br`` and ``>`` with
  the source's line break between them: inside a tag the line break is no
  end of a line to MediaWiki (its sanitizer rewrites the tag as ``<br />``
  before lists are read), so the block stays one item of the list it stands
  in while its source reads line by line (a space MediaWiki's French spacing
  would show as a no-break one is ``&#32;``).  No extension tag (``<nowiki>``,
  ``<pre>``): the pre-save transform numbers every extension tag of the page
  from the top and puts each back where its strip marker stands, so a
  strip-marker look-alike that anyone saved anywhere on the page would be
  replaced by the reply's own block, and the reply would rewrite their text.

Both drop what a page cannot show or MediaWiki rewrites at save time
(control characters, the ``\\x7f`` of strip markers, bidi overrides,
noncharacters), store text in NFC as MediaWiki does, and spell a leading
combining mark as an entity so that it cannot join the markup before it.
MediaWiki's own parser then judges every edit before and after it is saved
(:mod:`bot.edit_check`).

The final query is the one exception that keeps its own text: it goes into
``{{SPARQL|query=…}}`` (syntax colouring and the query service's "Try it!"
link) only when :func:`fits_sparql_template` proves that the template shows
and links it exactly as written; otherwise :func:`text_block` shows it and
:func:`agent.query_service.query_service_link` links it, percent-encoded.
"""

from __future__ import annotations

import re
import unicodedata

from agent.text import clean, dropped

#: ``<`` where MediaWiki could read a tag, a closing tag or a comment.
_TAG_START = re.compile(r"<(?=[/!?A-Za-z])")
#: ``&`` where MediaWiki would read an entity.
_ENTITY_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: The URL schemes of MediaWiki's ``$wgUrlProtocols`` that make a free external link in running text, after
#: what MediaWiki's ``\b`` (ASCII's) reads as a boundary: any character but an ASCII letter or digit, since an
#: ``_`` before the scheme may be spelt ``&#95;``, which ends in ``;``.
_FREE_LINK = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:bitcoin|ftps?|geo|git|gopher|https?|ircs?|magnet|mailto|matrix|mms|news|nntp|redis|"
    r"sftp|sips?|sms|ssh|svn|tel|telnet|urn|worldwind|xmpp)(?=:)")
#: Words that start a magic link (``ISBN 123…``) on wikis that still enable them: MediaWiki's ``\b`` is ASCII's,
#: and a character spelt as an entity before the word (``_`` is ``&#95;``) ends in ``;``, a boundary.
_MAGIC_LINK = re.compile(r"(?<![A-Za-z0-9])(?=(?:ISBN|RFC|PMID)[\s\xa0]+\d)")
#: A space MediaWiki's French spacing (``Sanitizer::armorFrenchSpaces``) shows as a no-break one: before
#: ``? : ; ! % » ›`` not followed by a word character (PCRE's ``\w``, ASCII), after ``« ‹``.
_FRENCH_SPACE = re.compile(r" (?=[?:;!%»›](?![A-Za-z0-9_]))|(?<=[«‹]) ")
#: A line break of a text block: a ``<br>`` whose tag holds the source's line break.
BLOCK_LINE_BREAK = "<br\n>"
#: Characters that extend the list prefix when they come first on a line.
_LINE_START = frozenset("*#:;")

#: Sequences the preprocessor or the pre-save transform acts on inside a template argument.
_TEMPLATE_UNSAFE = re.compile(
    r"\{\{|\}\}|\[\[|~~|__\w+__|<!|&[#A-Za-z0-9]+;"
    r"|</?[A-Za-z][A-Za-z0-9_-]*(?=[\s/>]|$)"  # an extension tag (<ref>, </pre >, <includeonly>)
    r"|[{}]\||\|[{}]"  # a bar next to a brace: its {{!}} would join the brace
    r"|(?:^|\n)="  # a heading or an argument's name
)


def _entity(char: str) -> str:
    return f"&#{ord(char)};"


def _leading_mark(text: str) -> str:
    """A combining mark first in *text* as an entity: raw, it would join the markup written before it."""
    if text and unicodedata.category(text[0]) in ("Mn", "Mc", "Me"):
        return _entity(text[0]) + text[1:]
    return text


def _run(text: str, index: int) -> int:
    """How many copies of ``text[index]`` come right before *index*."""
    run = 0
    while run < index and text[index - run - 1] == text[index]:
        run += 1
    return run


def encode(text: str, *, cell: bool = False) -> str:
    """*text* as inert wikitext within a line (never at a line's start); line breaks become ``<br>``.

    *cell*: the text is a table cell's, where a bar would end the cell.
    """
    text = clean(text)
    marked = {match.start() for match in _MAGIC_LINK.finditer(text)} \
        | {match.end() for match in _FREE_LINK.finditer(text)}
    out = []
    for index, char in enumerate(text):
        before = text[index - 1] if index else ""
        after = text[index + 1] if index + 1 < len(text) else ""
        if char == "\n":
            out.append("<br>")
        elif char == "<":
            out.append("&lt;" if _TAG_START.match(text, index) else char)
        elif char == "&":
            out.append("&amp;" if _ENTITY_START.match(text, index) else char)
        elif (char == "[" or index in marked or (index == 0 and char in _LINE_START)
              or (char in "{}" and (not before or not after or before in "{}|-" or after in "{}|-"))
              or (char == "|" and (cell or before in "{}" or after in "{}"))
              or (char == "~" and _run(text, index) % 3 == 2)  # no three in a row: a signature
              or (char in "'_" and _run(text, index) % 2 == 1)):  # no two in a row: bold, italics, __SWITCH__
            out.append(_entity(char))
        else:
            out.append(char)
    return _leading_mark("".join(out))


def inline(text: str, limit: int | None = None, *, cell: bool = False) -> str:
    """One line of untrusted text, white space folded, cut at *limit* characters."""
    text = " ".join(str(text).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return encode(text, cell=cell)


def text_block(text: str) -> str:
    """Untrusted text over several lines, shown as written: each line encoded, the lines joined by ``<br\\n>`` (one
    line break on the page, one in the source, none that ends the list item) in a ``<div class="mw-code">``, which
    the skins show as a code block that keeps spaces.  It holds no extension tag and no comment, whose strip marker
    a look-alike on the page could take.  A space French spacing would turn into a no-break one (``wd:Q5 ;``) is
    spelt ``&#32;``: a query copied from the block keeps its plain spaces."""
    lines = (_FRENCH_SPACE.sub("&#32;", encode(line)) for line in clean(text).split("\n"))
    return '<div class="mw-code">' + BLOCK_LINE_BREAK.join(lines) + "</div>"


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
            and not any(dropped(char) or char in "\r\u0085\u2028\u2029" for char in query)
            and _TEMPLATE_UNSAFE.search(query) is None)


def sparql_template(query: str) -> str:
    """``{{SPARQL|query=…}}`` for a query :func:`fits_sparql_template` accepts."""
    if not fits_sparql_template(query):
        raise ValueError("this query holds wikitext the {{SPARQL}} template would act on; use text_block")
    # The line break keeps a closing brace of the query apart from the template's (the argument is trimmed).
    return "{{SPARQL|query=" + query.replace("|", "{{!}}") + "\n}}"
