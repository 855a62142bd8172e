"""Reading wikitext someone else wrote, in bounded time.

Two tools, each linear in the text:

* :func:`mask_inert` blanks what MediaWiki does not read as wikitext:
  comments, the content of extension tags (``<nowiki>``, ``<pre>``,
  ``<syntaxhighlight>``, ...) and of ``<includeonly>`` (an unclosed one hides
  the rest of the page, as in MediaWiki), keeping offsets and newlines;
* :func:`parse` hands text to mwparserfromhell, whose tokenizer backtracks
  on what is never closed (10 kB of ``{{a|`` take 8 s, 20 kB 35 s; ``<div a=``,
  ``[http://a``, ``{|`` and ``<b>`` are as bad), only after two bounds:
  openers that are never closed (``{{``, ``[[``, an external link's ``[``, a
  tag's ``<``, a table's ``{|``) are spelt as entities (the parse would read
  them as text anyway, and ``strip_code`` gives them back as they were), and
  the text is cut at line ends into pieces of about :data:`PIECE_CHARS`
  characters (never inside a template call or an extension tag), parsed one
  by one, so no single parse is fed more than a bounded piece.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable

import mwparserfromhell
from mwparserfromhell.smart_list import SmartList
from mwparserfromhell.wikicode import Wikicode

#: Tags whose content MediaWiki does not read as wikitext of the page (plus comments): nothing inside counts.
INERT_TAGS = frozenset({
    "nowiki", "pre", "syntaxhighlight", "source", "math", "chem", "ce", "score", "graph", "templatedata",
    "timeline", "hiero", "mapframe", "maplink", "gallery", "ref", "references", "poem", "indicator",
    "includeonly", "langconvert", "categorytree", "inputbox", "imagemap", "section", "charinsert"})
#: Tags MediaWiki reads up to the end of the page when they are never closed.
_UNTIL_THE_END = frozenset({"includeonly"})
#: One parse of mwparserfromhell is fed about this many characters at most (more only for one template call).
PIECE_CHARS = 1500
#: A template call longer than this is read as text: its braces are spelt as entities.
MAX_CALL_CHARS = 10000
_URL_START = re.compile(r"\[(?=(?:https?:|ftp:|mailto:|//))", re.IGNORECASE)
_TAG_START = re.compile(r"<(?=/?[A-Za-z][A-Za-z0-9]*(?:[\s/>]|$))")
#: Start and end tags of MediaWiki's HTML elements and extension tags (``<http://…>`` in a query is none).
_ELEMENT = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)(?=[\s/>])[^<>\n]*?(/?)>")
_VOID = frozenset({"br", "hr", "img", "wbr", "meta", "link", "col", "area", "base", "embed", "source", "track",
                   "input"})


def _opener(tags: Iterable[str]) -> re.Pattern:
    return re.compile(r"<!--|<(" + "|".join(sorted(tags)) + r")(?:\s[^>]{0,500}?)?(/?)>", re.IGNORECASE)


_INERT_OPEN = _opener(INERT_TAGS)


def inert_spans(text: str, tags: frozenset[str] = INERT_TAGS) -> list[tuple[int, int]]:
    """Where comments and the extension tags *tags* (with their content) lie in *text*, in order.

    An unclosed comment (or ``<includeonly>``) runs to the end of the text,
    as in MediaWiki; another unclosed tag is plain text.  Linear: a closing
    tag that is missing is searched for once.
    """
    opener = _INERT_OPEN if tags is INERT_TAGS else _opener(tags)
    spans: list[tuple[int, int]] = []
    no_closer_after: dict[str, int] = {}
    search_from = 0
    while True:
        found = opener.search(text, search_from)
        if found is None:
            return spans
        if found.group(0) == "<!--":
            close = text.find("-->", found.end())
            end = len(text) if close == -1 else close + 3
        elif found.group(2):  # <nowiki/>: an empty tag
            end = found.end()
        else:
            name = found.group(1).lower()
            closer = None
            if no_closer_after.get(name, len(text) + 1) > found.end():
                closer = re.compile(r"</" + name + r"\s*>", re.IGNORECASE).search(text, found.end())
                if closer is None:
                    no_closer_after[name] = found.end()
            if closer is not None:
                end = closer.end()
            elif name in _UNTIL_THE_END:
                end = len(text)
            else:
                search_from = found.end()
                continue
        spans.append((found.start(), end))
        search_from = end


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    """*text* with every span blanked (newlines kept), so offsets stay those of *text*."""
    pieces, position = [], 0
    for start, end in spans:
        pieces.append(text[position:start])
        pieces.append(re.sub(r"[^\n]", " ", text[start:end]))
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


def mask_inert(text: str, tags: frozenset[str] = INERT_TAGS) -> str:
    """*text* with comments and non-wikitext tags (their content included) blanked, newlines kept."""
    return blank(text, inert_spans(text, tags))


def _pairs(tokens: Iterable[tuple[int, int, bool]]) -> tuple[list[tuple[int, int]], list[int]]:
    """Openers and closers (position, end, is_opener) matched with one stack: the closed pairs, outermost
    ones only, in order, and the positions of openers never closed."""
    stack: list[int] = []
    closed: list[tuple[int, int]] = []
    for start, end, opens in tokens:
        if opens:
            stack.append(start)
        elif stack:
            begin = stack.pop()
            if not stack:
                closed.append((begin, end))
    return closed, stack


def _tokens(masked: str, opening: str, closing: str) -> Iterable[tuple[int, int, bool]]:
    for token in re.finditer(re.escape(opening) + "|" + re.escape(closing), masked):
        yield token.start(), token.end(), token.group() == opening


def _table_tokens(masked: str) -> Iterable[tuple[int, int, bool]]:
    for token in re.finditer(r"(?m)^[ \t:]*(\{\||\|\})", masked):
        yield token.start(1), token.end(1), token.group(1) == "{|"


def brace_spans(masked: str, opening: str = "{{", closing: str = "}}") -> list[tuple[int, int]]:
    """The outermost closed ``{{…}}`` (or other bracket) pairs of *masked*, in order; one stack, linear."""
    return _pairs(_tokens(masked, opening, closing))[0]


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """*spans* as ordered, disjoint spans (overlapping and nested ones joined)."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def inside(spans: list[tuple[int, int]], position: int) -> bool:
    """Whether *position* lies strictly inside one of the ordered, disjoint *spans*."""
    index = bisect_right(spans, (position, float("inf"))) - 1
    return index >= 0 and spans[index][0] < position < spans[index][1]


def _unclosed_on_line(masked: str, opener: re.Pattern, closer: str) -> list[int]:
    """Openers with no *closer* after them on their line (external links, tags)."""
    left = []
    for line in re.finditer(r"[^\n]+", masked):
        last = line.group().rfind(closer)
        for found in opener.finditer(line.group(), last + 1):
            left.append(line.start() + found.start())
    return left


def _unclosed_elements(masked: str) -> list[int]:
    """Start tags (``<b>``, ``<div …>``) with no end tag of their name after them."""
    stacks: dict[str, list[int]] = {}
    for tag in _ELEMENT.finditer(masked):
        name = tag.group(2).lower()
        if tag.group(1):
            if stacks.get(name):
                stacks[name].pop()
        elif not tag.group(3) and name not in _VOID:
            stacks.setdefault(name, []).append(tag.start())
    return [position for stack in stacks.values() for position in stack]


def defuse(text: str) -> str:
    """*text* with every opener that is never closed spelt as entities.

    mwparserfromhell would read those openers as text after backtracking over
    the rest of the text; as entities they are text at once, and
    ``strip_code`` turns them back into the characters they were.  A template
    call or link longer than :data:`MAX_CALL_CHARS` is read as text too.
    """
    masked = mask_inert(text)
    spelt: set[int] = set()
    for opening, closing in (("{{", "}}"), ("[[", "]]")):
        closed, left = _pairs(_tokens(masked, opening, closing))
        spelt.update(position + offset for position in left for offset in (0, 1))
        spelt.update(start + offset for start, end in closed if end - start > MAX_CALL_CHARS for offset in (0, 1))
    spelt.update(_pairs(_table_tokens(masked))[1])
    spelt.update(_unclosed_on_line(masked, _URL_START, "]"))
    spelt.update(_unclosed_on_line(masked, _TAG_START, ">"))
    spelt.update(_unclosed_elements(masked))
    if not spelt:
        return text
    pieces, position = [], 0
    for index in sorted(spelt):
        pieces.append(text[position:index])
        pieces.append(f"&#{ord(text[index])};")
        position = index + 1
    pieces.append(text[position:])
    return "".join(pieces)


def _after_spans(spans: list[tuple[int, int]], position: int) -> int:
    """*position*, or the end of the span it lies in, less one (a piece ends after the character there)."""
    index = bisect_right(spans, (position, float("inf"))) - 1
    return spans[index][1] - 1 if index >= 0 and spans[index][0] < position < spans[index][1] else position


def _pieces(text: str) -> list[str]:
    """*text* cut at line ends into pieces of about PIECE_CHARS, never inside a template call, a link or an
    extension tag (a call or link longer than MAX_CALL_CHARS was defused: it is no span here)."""
    masked = mask_inert(text)
    spans = merged(inert_spans(text) + [span for opening, closing in (("{{", "}}"), ("[[", "]]"))
                                        for span in brace_spans(masked, opening, closing)])
    pieces, start = [], 0
    while len(text) - start > PIECE_CHARS:
        cut = text.find("\n", start + PIECE_CHARS, start + 2 * PIECE_CHARS)
        while cut != -1 and inside(spans, cut):
            cut = text.find("\n", cut + 1, start + 2 * PIECE_CHARS)
        if cut == -1:  # a long line: cut it after a space or an entity's ";" outside every span
            cut = next((start + PIECE_CHARS + found.start() for found in
                        re.finditer(r"[ ;]", text[start + PIECE_CHARS:start + 2 * PIECE_CHARS])
                        if not inside(spans, start + PIECE_CHARS + found.start())), None)
            if cut is None:  # nowhere: where it must be, outside any span and entity
                cut = _after_spans(spans, start + 2 * PIECE_CHARS)
                entity = text.rfind("&", cut - 12, cut + 1)
                cut = entity - 1 if entity != -1 and ";" not in text[entity:cut + 1] else cut
        pieces.append(text[start:cut + 1])
        start = cut + 1
    pieces.append(text[start:])
    return pieces


def parse(text: str) -> Wikicode:
    """mwparserfromhell's reading of *text*, each parse fed a bounded, defused piece.

    ``str()`` of the result is *text* with its unclosed openers spelt as entities.
    """
    nodes: list = []
    for piece in _pieces(defuse(text)):
        nodes.extend(mwparserfromhell.parse(piece).nodes)
    return Wikicode(SmartList(nodes))
