"""An approved draft read back as data and rendered again by the bot: what a reviewer wrote is never posted as
markup.

A draft on the review page is the reply as the bot rendered it.  A reviewer
may change what a reviewer needs to change: the words (the lead, the
explanation, a line of their own), the final query, the preview's rows (a
cell, a row removed, the whole table removed), or remove a part.  When the
draft is approved, :func:`rerender` splits the approved text into the parts
the bot's renderer writes (:func:`split_parts`) and builds the reply again:

* a part equal to one the bot wrote for this draft is the bot's markup, used
  once, as it was written;
* a changed query is read back as its SPARQL text and shown again by
  :func:`bot.render.final_query_wikitext` (the ``{{SPARQL}}`` template when it
  shows the query exactly, else a text block and a link);
* a changed preview is read back as its cells and written again as a
  wikitable, each cell an item (``{{Q|Q42}}``) or text;
* every other line is words: its text as the reader saw it (entities
  decoded), item links (``{{Q|Q42}}``, ``[[Q42]]``, ``[[Q42|label]]``) kept as
  links, everything else escaped by :func:`bot.wikitext.encode` exactly as the
  model's text is;
* the steps and the footer (who wrote the reply, who runs the bot) are the
  bot's alone: a change to them is not posted, and the footer always ends the
  reply.

In the plain form (:class:`bot.render.Markup`, for a wiki whose templates the
edit check refuses) every part that calls a template is written again from
its data the same way: items as links, the query as a text block and a link.

So no style, tag, template, parser function or magic word a reviewer (or
anyone whose text a reviewer approved) writes can reach the forum as markup:
nothing has to recognise it.  Where a reviewer's markup is shown as text, or a
change is left out, :class:`Rerendered` says so, and the review page tells the
reviewer.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from enum import StrEnum

from agent.graph import ID_NUMBER, ITEM_ID
from bot.render import Markup, final_query_wikitext, item_link
from bot.wikitext import BLOCK_LINE_BREAK, encode

#: How much of a reviewer's line the review page quotes when it says the line's markup was shown as text.
QUOTED_CHARS = 60


class PartKind(StrEnum):
    """The parts the bot's reply template writes (``bot/templates/reply.wiki.j2``)."""

    WORDS = "words"
    QUERY = "query"
    PREVIEW = "preview"
    STEPS = "steps"
    FOOTER = "footer"


@dataclass(frozen=True)
class Part:
    kind: PartKind
    #: The part's wikitext as it stands, its lines joined by ``\n``, its indentation included.
    source: str


_INDENT = re.compile(r"^[:*#;]*\s*")
_QUERY_TEMPLATE = "{{SPARQL|query="
_CODE_BLOCK = '<div class="mw-code">'
_STEPS_BLOCK = '<div class="mw-collapsible'
#: An item a reviewer may link, as the bot's preview does (``{{Q|Q42}}``) or as a wiki link.
#: Characters MediaWiki may read as markup in the middle of a line.
_MARKUP = re.compile(r"[<\[\]{}|'~_]")
#: ``{{Q|42}}``, ``{{P|P31}}`` (the template named by the ID's letter, the number with or without it), or
#: ``[[Q42|label]]``.
_ITEM = re.compile(r"\{\{\s*(Q|P)\s*\|\s*(?:\1)?(" + ID_NUMBER + r")\s*\}\}"
                   r"|\[\[\s*(" + ITEM_ID + r")\s*(?:\|([^\[\]{}|\n]*))?\]\]")


def _body(line: str) -> str:
    return _INDENT.sub("", line, count=1)


def split_parts(text: str) -> list[Part]:
    """*text* (a reply's wikitext, as the bot wrote it or as a reviewer left it) as the parts the reply template
    writes: a part of several lines (the query, the preview, the steps) runs as far as its markup does, every
    other non-blank line is a part of its own."""
    lines = text.split("\n")
    parts: list[Part] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        body = _body(line)
        end = index + 1
        if not line.strip():
            index = end
            continue
        if body.startswith(_QUERY_TEMPLATE):
            while not lines[end - 1].rstrip().endswith("}}") and end < len(lines):
                end += 1
            kind = PartKind.QUERY
        elif body.startswith(_CODE_BLOCK) or body.startswith(_STEPS_BLOCK):
            while lines[end - 1].endswith("<br") and end < len(lines):
                end += 1
            kind = PartKind.QUERY if body.startswith(_CODE_BLOCK) else PartKind.STEPS
        elif body.startswith("{|"):
            while end < len(lines) and lines[end][:1] in ("|", "!"):
                end += 1
                if lines[end - 1].startswith("|}"):
                    break
            kind = PartKind.PREVIEW
        elif body.startswith("<small>") and not any(line.strip() for line in lines[end:]):
            kind = PartKind.FOOTER  # the reply's last line
        else:
            kind = PartKind.WORDS
        parts.append(Part(kind, "\n".join(lines[index:end])))
        index = end
    return parts


def query_of(part: Part) -> str:
    """The SPARQL a query part shows: the ``{{SPARQL}}`` template's argument, or a text block's lines as read."""
    body = _body(part.source)
    if body.startswith(_QUERY_TEMPLATE):
        inner = body[len(_QUERY_TEMPLATE):].rstrip()
        inner = inner[:-2] if inner.endswith("}}") else inner
        return inner.replace("{{!}}", "|").strip()
    inner = body[len(_CODE_BLOCK):].rsplit("</div>", 1)[0]
    return "\n".join(html.unescape(line) for line in inner.split(BLOCK_LINE_BREAK)).strip()


def _marked_up(source: str, rendered: str) -> bool:
    """Whether a reviewer's *source* held markup that *rendered* shows as text: the rendering escaped characters
    that the source wrote as they are."""
    return len(_MARKUP.findall(rendered)) < len(_MARKUP.findall(source))


def words_of(text: str, *, cell: bool = False, markup: Markup = Markup.TEMPLATES) -> str:
    """A reviewer's words as the reply's: the text as read (entities decoded), item links kept as ``{{Q|…}}`` (in
    the plain *markup*, a link) or ``[[Q…|…]]``, everything else escaped as the model's text is."""
    out: list[str] = []
    position = 0
    for found in _ITEM.finditer(text):
        out.append(_encoded(html.unescape(text[position:found.start()]), cell, first=not out))
        if found[1]:
            entity = found[1] + found[2]
            out.append(item_link(entity) if markup == Markup.LINKS else "{{" + found[1] + "|" + entity + "}}")
        else:
            label = encode(html.unescape(found[4] or ""), cell=True).replace("]", "&#93;").strip()
            out.append(f"[[{found[3]}|{label}]]" if label else f"[[{found[3]}]]")
        position = found.end()
    out.append(_encoded(html.unescape(text[position:]), cell, first=not out))
    return "".join(out)


def _encoded(text: str, cell: bool, first: bool) -> str:
    """*text* as :func:`encode` writes it; after a link (not *first*) it is not at the start of a line, where a
    list character would need escaping."""
    if first or not text or text[0] not in "*#:;":
        return encode(text, cell=cell)
    return text[0] + encode(text[1:], cell=cell)


def _cells(line: str, separator: str) -> list[str]:
    return [cell.strip() for cell in line[1:].split(separator)]


def preview_of(part: Part) -> tuple[list[str], list[list[str]]]:
    """A preview part's headers and rows of cells, as their wikitext."""
    headers: list[str] = []
    rows: list[list[str]] = []
    for line in part.source.split("\n")[1:]:
        if line.startswith("|}"):
            break
        if line.startswith("!"):
            headers += _cells(line, "!!")
        elif line.startswith("|-"):
            rows.append([])
        elif line.startswith("|"):
            if not rows:
                rows.append([])
            rows[-1] += _cells(line, "||")
    return headers, [row for row in rows if row]


def _cell(text: str, markup: Markup = Markup.TEMPLATES) -> str:
    return words_of(text, cell=True, markup=markup) or " "


def preview_wikitext(indent: str, headers: list[str], rows: list[list[str]],
                     markup: Markup = Markup.TEMPLATES) -> str:
    """The preview written again from its cells (items as *markup* writes them); "" when no row is left."""
    if not rows:
        return ""
    lines = [indent + '{| class="wikitable"']
    if headers:
        lines.append("! " + " !! ".join(_cell(header, markup) for header in headers))
    for row in rows:
        lines += ["|-", "| " + " || ".join(_cell(cell, markup) for cell in row)]
    return "\n".join(lines + ["|}"])


@dataclass
class Rerendered:
    """The reply rendered again from an approved draft, and what of the reviewer's text did not go as written."""

    #: The reply to post, its signature left out.
    text: str
    #: The reviewer's lines (quoted, cut) whose markup is shown as text.
    shown_as_text: list[str] = field(default_factory=list)
    #: The bot's parts a reviewer changed whose change is not posted (the steps, the footer).
    kept: list[PartKind] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.shown_as_text or self.kept)


def plain_part(part: Part, indent: str, try_it: str) -> str:
    """One of the bot's own parts in the plain form (:class:`bot.render.Markup`): written again from its data where
    it calls a template (the query, the preview's items, an item in the words), else as it was written."""
    if "{{" not in part.source:
        return part.source
    if part.kind == PartKind.QUERY:
        return indent + final_query_wikitext(query_of(part), try_it=try_it, markup=Markup.LINKS)
    if part.kind == PartKind.PREVIEW:
        return preview_wikitext(indent, *preview_of(part), markup=Markup.LINKS)
    if part.kind == PartKind.WORDS:
        return indent + words_of(_body(part.source).strip(), markup=Markup.LINKS)
    return part.source


def rerender(written: str, approved: str, try_it: str, markup: Markup = Markup.TEMPLATES) -> Rerendered:
    """The reply to post for a draft the bot *written* and a reviewer *approved* (both without signature): the
    bot's parts as it wrote them, the reviewer's changes read back as data and rendered again (*try_it* labels
    the query service's link of a query that needs a text block); in the plain *markup*, every part that calls a
    template written again without (:func:`plain_part`)."""
    own = split_parts(written)
    indent = re.match(r"^:*", written)[0] or ":"
    unused = [part.source for part in own]
    footer = next((part.source for part in own if part.kind == PartKind.FOOTER), "")
    steps = next((part.source for part in own if part.kind == PartKind.STEPS), "")
    done = Rerendered("")
    lines: list[str] = []
    for part in split_parts(approved):
        if part.kind == PartKind.FOOTER:
            if part.source != footer:
                done.kept.append(PartKind.FOOTER)
            continue
        if part.source in unused:
            unused.remove(part.source)
            lines.append(plain_part(part, indent, try_it) if markup == Markup.LINKS else part.source)
            continue
        if part.kind == PartKind.STEPS:
            done.kept.append(PartKind.STEPS)
            if steps in unused:
                unused.remove(steps)
                lines.append(steps)
        elif part.kind == PartKind.QUERY:
            query = query_of(part)
            if query:
                lines.append(indent + final_query_wikitext(query, try_it=try_it, markup=markup))
        elif part.kind == PartKind.PREVIEW:
            headers, rows = preview_of(part)
            table = preview_wikitext(indent, headers, rows, markup)
            opening = _body(part.source.split("\n", 1)[0])
            if opening.strip() != '{| class="wikitable"':
                done.shown_as_text.append(_quoted(opening))  # a table's own attributes are never posted
            done.shown_as_text += [_quoted(cell) for row in [headers, *rows] for cell in row
                                   if _marked_up(cell, _cell(cell))]
            if table:
                lines.append(table)
        else:
            body = _body(part.source).strip()
            rendered = words_of(body, markup=markup)
            if rendered.strip():
                lines.append(indent + rendered)
                if _marked_up(body, words_of(body)):  # what the reviewer wrote, whichever form is posted
                    done.shown_as_text.append(_quoted(body))
    if footer:
        lines.append(footer)
    done.text = "\n".join(lines)
    return done


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS - 1] + "…"
