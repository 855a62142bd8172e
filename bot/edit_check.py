"""MediaWiki's own verdict on an edit, before it is saved and after.

Our own check (:func:`bot.wiki.verify_only_added`) proves the new *wikitext*
is the old one plus the reply.  That is not enough: the parser can read a
few characters of the reply as markup that reaches outside it (a strip
marker, a tag closed with a space, an unexpanded signature).  So the wiki
that will store the edit is asked, through pywikibot's API request:

* the pre-save transform (``action=parse&onlypst``) of the new text must
  leave every character of the old text alone and turn the reply's ``~~~~``
  into the bot's signature, nothing else;
* the parse of the transformed text must show the same sections, categories,
  templates, external links, user links, images, language links and page
  properties as the parse of the revision it was built on, except what the
  reply's own markup adds: the ``{{SPARQL}}`` and ``{{Q}}`` templates (and
  what they transclude), the "Try it!" link to the query service, entity
  links, a link to the forum page itself or one of its archive pages (the
  "earlier request" line), the bot's signature links and one more link to
  each user the reply addresses (the ``{{re|…}}`` that notifies the asker,
  and whoever the reply answers besides), if the history names them as
  writers of the section;
* the reply's collapsible block must come out of the parser closed;
* the reply must render where a reader of the asker's section sees it: a
  word added after the reply's signature (only in the text that is parsed,
  never saved) must show up once in the page's HTML, with no ancestor hidden
  by its style (``display:none``, ``visibility:hidden``, near-zero size or
  opacity, cut off, positioned or pushed away: :func:`bot.styles.hiding`),
  its class (a collapsed block) or missing altogether (``<includeonly>``),
  and the last heading before it that a reader sees (a hidden one heads
  nothing; for a question merged into an older thread under a subheading,
  the last one of that subheading's level or higher) must be the asker's,
  or the one the text it answers shows
  under (a follow-up below a heading that a block someone saved renders,
  a gallery's caption: its reader finds the reply beside it);
* the reply must stay inside its own box: rendered alone, each of its
  elements may carry only a style and classes the bot's own markup renders
  with on this wiki (measured once on a sample reply): what a style does is
  never read, so no spelling of one can pass; nor may it leave an element
  open around the text that follows it.  Every reply, an approved draft
  included, is markup the bot renders itself (:mod:`bot.approved`): this is
  the second line.

Any difference raises :class:`EditRefused` naming it; nothing is saved.
"""

from __future__ import annotations

import html
import re
import secrets
import urllib.parse
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from html.parser import HTMLParser

import mwparserfromhell
import pywikibot

from agent.graph import PAGE_ID
from agent.kb.engines import KNOWN_ENGINES
from agent.kb.base import Engine
from bot.forum import in_forum
from bot.render import Markup
from bot.reply_sample import sample_reply
from bot.styles import declarations, hiding

QUERY_SERVICE = "https://query.wikidata.org/"
#: Markup a reply may hold: the query template, entity templates and the signature.
REPLY_SAMPLE = "{{SPARQL|query=SELECT ?x WHERE { ?x ?p ?o }}}{{Q|Q1}} ~~~~"
ENTITY_LINK = re.compile(r"^(?:[A-Za-z ]+:)?" + PAGE_ID + "$")
PARSE_PROPS = "sections|categories|templates|externallinks|links|images|properties|langlinks|iwlinks|text"
COLLAPSIBLE = re.compile(r"""class=["'][^"']*\bmw-collapsible\b""")
USER_NAMESPACES = (2, 3)


class EditRefused(RuntimeError):
    """The wiki's parser shows the edit would change more than adding the reply, or cannot show it; nothing was
    saved."""

    def __init__(self, reason: str, unexpected: frozenset[str] = frozenset()) -> None:
        super().__init__(reason)
        #: What the edit would bring into the page that the reply's own markup does not (templates, links,
        #: external links, categories, images, by title or URL): what a template of the reply may have brought.
        self.unexpected = unexpected


@dataclass(frozen=True)
class CheckedEdit:
    """The exact page text to save, and the reply as it stands in it (signature expanded)."""

    text: str
    reply: str
    #: Where the reply went in the old text (the ``point`` it was checked at).
    point: int = -1


@dataclass(frozen=True)
class Rendering:
    """What a parse of a page shows, in the terms a reader or a category page would notice."""

    sections: tuple[tuple[str, str], ...]
    categories: frozenset[str]
    templates: frozenset[str]
    external_links: frozenset[str]
    links: frozenset[str]
    images: frozenset[str]
    properties: frozenset[tuple[str, str]]
    langlinks: frozenset[str]
    collapsibles: int
    #: How many times each user page or user talk page is linked: a second link to one pings its user again.
    user_links: tuple[tuple[str, int], ...]

    @classmethod
    def from_parse(cls, parse: dict) -> Rendering:
        properties = parse.get("properties") or {}
        if isinstance(properties, list):  # formatversion 1 shape
            properties = {item["name"]: item.get("*", "") for item in properties}
        text = parse.get("text", "")
        users = sorted({item["title"] for item in parse.get("links", []) if item.get("ns") in USER_NAMESPACES})
        return cls(
            sections=tuple((str(item["level"]), item["line"]) for item in parse.get("sections", [])),
            categories=frozenset(item["category"] for item in parse.get("categories", [])),
            templates=frozenset(item["title"] for item in parse.get("templates", [])),
            external_links=frozenset(parse.get("externallinks", [])),
            links=frozenset(item["title"] for item in parse.get("links", []))
            | frozenset(f"{item['prefix']}:{item['title']}" for item in parse.get("iwlinks", [])),
            images=frozenset(parse.get("images", [])),
            properties=frozenset((name, str(value)) for name, value in properties.items()),
            langlinks=frozenset(f"{item['lang']}:{item['title']}" for item in parse.get("langlinks", [])),
            collapsibles=len(COLLAPSIBLE.findall(text)),
            user_links=tuple((title, len(re.findall(r'title="' + re.escape(html.escape(title)) + r'[" ]', text)))
                             for title in users),
        )


@dataclass(frozen=True)
class Allowance:
    """What the reply's own markup may add to a page: measured on this wiki, once."""

    templates: frozenset[str]
    links: frozenset[str]
    #: The forum page: a link to it or to one of its archive pages is the reply's.
    forum: str = ""
    #: The classes and inline styles (:func:`style_key`) the bot's own markup renders with on this wiki.
    classes: frozenset[str] = frozenset()
    styles: frozenset[str] = frozenset()

    #: Where the configured engines open a query (:func:`engine_pages`).
    engine_pages: tuple[str, ...] = ()
    #: External links the reply writes itself (its engines' "Try it" links), unquoted: the reply's, not a template's.
    own_external_links: frozenset[str] = frozenset()

    def allows_external_link(self, url: str) -> bool:
        return url.startswith(QUERY_SERVICE) or urllib.parse.unquote(url) in self.own_external_links

    def allows_link(self, title: str) -> bool:
        return title in self.links or bool(ENTITY_LINK.match(title)) or bool(self.forum) and in_forum(title, self.forum)


def engine_pages(engines: Iterable[Engine] = ()) -> tuple[str, ...]:
    """Where the SPARQL engines the bot runs its final query on open a query (their ``try_url``: the known ones
    and *engines*, those the operator configures): the only places a reply's own "Try it on …" links go."""
    return tuple(sorted({engine.try_url for engine in (*KNOWN_ENGINES.values(), *engines)
                         if engine.try_url.startswith(("https://", "http://"))}))


def own_external_links(reply: str, pages: tuple[str, ...]) -> frozenset[str]:
    """The external links to an engine's page (one of *pages*, :func:`engine_pages`) that *reply* writes in its
    own text, outside any template (the bot's wikitext encodes every ``[`` of text it did not write), unquoted as
    :meth:`Allowance.allows_external_link` compares them."""
    return frozenset(url for link in mwparserfromhell.parse(reply).filter_external_links(recursive=False)
                     if (url := urllib.parse.unquote(str(link.url))).startswith(pages))


def parse(site: pywikibot.site.APISite, title: str, *, text: str | None = None, oldid: int | None = None,
          props: str = PARSE_PROPS) -> dict:
    """One ``action=parse`` of *text* as the page *title* would hold it, or of revision *oldid*.

    The API answers at most ``$wgAPIMaxResultSize`` (8 MiB by default) in one
    response, and the parse of a page near the wiki's largest
    (``$wgMaxArticleSize``, 2 MiB) can be more: then the page's HTML and the
    lists of what it holds are asked for in two requests, each of which may
    fit.  Raises :class:`EditRefused` when even that is cut.
    """
    answer = _parse_answer(site, title, text, oldid, props)
    wanted = props.split("|")
    if answer is None and "text" in wanted and len(wanted) > 1:
        html = _parse_answer(site, title, text, oldid, "text")
        lists = html and _parse_answer(site, title, text, oldid, "|".join(prop for prop in wanted if prop != "text"))
        answer = lists and {**lists, "text": html["text"]}
    if answer is None:
        raise EditRefused(f"MediaWiki's parse of {title} is larger than its API may answer, so no edit of it can "
                          "be checked; archiving old sections makes the page smaller")
    return answer


def _parse_answer(site: pywikibot.site.APISite, title: str, text: str | None, oldid: int | None,
                  props: str) -> dict | None:
    """The ``parse`` part of one request's answer; ``None`` when the wiki cut it at the API's size limit (a warning
    and no parse)."""
    # No table of contents and no edit links: the check reads neither, and they add a fifth to a page's HTML.
    params = {"action": "parse", "prop": props, "formatversion": 2, "disablelimitreport": True,
              "disableeditsection": True, "disabletoc": True}
    if oldid is not None:
        params["oldid"] = oldid
    else:
        params.update(title=title, text=text, contentmodel="wikitext")
    return site.simple_request(**params).submit().get("parse")


def pre_save_transform(site: pywikibot.site.APISite, title: str, text: str) -> str:
    """*text* as MediaWiki would store it (signatures expanded, ``subst:`` done, trailing space gone)."""
    params = {"action": "parse", "title": title, "text": text, "contentmodel": "wikitext", "onlypst": True,
              "formatversion": 2}
    return site.simple_request(**params).submit()["parse"]["text"]


def measure_allowance(site: pywikibot.site.APISite, title: str, markup: str = "",
                      engines: Iterable[Engine] = ()) -> Allowance:
    """Parse a sample reply on this wiki, in both its forms (:class:`bot.render.Markup`): the templates, links,
    classes and styles its markup brings (with *markup*, the bot's own fixed links: its operator, its documentation
    page) are the allowed ones; the reply's own links to *engines* (those the operator configured) are too."""
    text = pre_save_transform(site, title, REPLY_SAMPLE + markup + "\n" + sample_reply() + "\n"
                              + sample_reply(Markup.LINKS))
    parsed = parse(site, title, text=text)
    sample = Rendering.from_parse(parsed)
    elements = _Elements.of(parsed.get("text", ""))
    return Allowance(templates=sample.templates, links=sample.links, forum=title, engine_pages=engine_pages(engines),
                     classes=frozenset(name for element in elements for name in element.classes),
                     styles=frozenset(style_key(element.style) for element in elements))


def style_key(style: str) -> str:
    """An inline style as a browser applies it (:func:`bot.styles.declarations`), written one way: two spellings of
    the same style have the same key."""
    return ";".join(f"{name}:{value}" for name, value in declarations(style).items())


def _compared(old: Rendering, new: Rendering, allowance: Allowance) -> list[tuple[str, frozenset, frozenset, list]]:
    """What a page holds before and after the edit, by kind (categories, templates, links...), and what it gains
    that the reply's own markup does not bring (*allowance*)."""
    compared = []
    for name, before, after, allowed in (
            ("categories", old.categories, new.categories, lambda item: False),
            ("templates", old.templates, new.templates, allowance.templates.__contains__),
            ("external links", old.external_links, new.external_links, allowance.allows_external_link),
            ("links", old.links, new.links, allowance.allows_link),
            ("images", old.images, new.images, lambda item: False),
            ("page properties", old.properties, new.properties, lambda item: False),
            ("language links", old.langlinks, new.langlinks, lambda item: False)):
        compared.append((name, before, after, sorted(item for item in after - before if not allowed(item))))
    return compared


def unexpected_items(old: Rendering, new: Rendering, allowance: Allowance) -> frozenset[str]:
    """The templates, links, external links, categories and images *new* gains over *old* that the reply's own
    markup does not bring: what one of the reply's templates may have brought in (:func:`template_causes`)."""
    return frozenset(item for name, _, _, gained in _compared(old, new, allowance)
                     if name in ("categories", "templates", "external links", "links", "images") for item in gained)


def differences(old: Rendering, new: Rendering, allowance: Allowance, reply_collapsibles: int,
                added_sections: tuple[tuple[str, str], ...] = (), addressed: frozenset[str] = frozenset()) -> list[str]:
    """Every way *new* differs from *old* beyond what a reply may add (and *added_sections* at the end), in words.

    *addressed* holds the user pages the reply may link once more: the users of the thread it answers whom the
    reply addresses (``{{re|…}}``) to notify them, and no one else."""
    found = []
    if new.sections != old.sections + added_sections:
        added = [line for _, line in new.sections if (_, line) not in old.sections]
        found.append(f"the sections change (new or moved: {added[:5]})")
    for name, before, after, gained in _compared(old, new, allowance):
        lost = sorted(before - after)
        if lost:
            found.append(f"{name} would disappear: {lost[:5]}")
        if gained:
            found.append(f"{name} would appear: {gained[:5]}")
    before, after = Counter(dict(old.user_links)), Counter(dict(new.user_links))
    pinged = sorted(title for title in after if after[title] > before[title] and title not in allowance.links
                    and not (title in addressed and after[title] == before[title] + 1))
    if pinged:
        found.append(f"user links would appear: {pinged[:5]}")
    unlinked = sorted(title for title in before if after[title] < before[title])
    if unlinked:
        found.append(f"user links would disappear: {unlinked[:5]}")
    if new.collapsibles != old.collapsibles + reply_collapsibles:
        found.append(f"the page would hold {new.collapsibles} collapsible blocks, not "
                     f"{old.collapsibles} + {reply_collapsibles}")
    return found


SENTINEL = "SpinachReplyEndSentinel"
#: Classes that keep an element from a reader's eyes (a collapsed block's content, MediaWiki's hiding classes).
HIDING_CLASSES = frozenset({"mw-collapsed", "hidden", "mw-hidden-catlinks", "sr-only", "visualhide",
                            "screen-reader-text"})


def _byte_line_starts(text: str) -> dict[int, int]:
    """Where each line of *text* starts, in UTF-8 bytes (``surrogatepass``), mapped to its character offset: what a
    ``byteoffset`` counted in bytes stands for, found for all the headings of a page in one pass over it."""
    starts, chars, size = {}, 0, 0
    for line in text.split("\n"):
        starts[size] = chars
        chars += len(line) + 1
        size += len(line.encode("utf-8", "surrogatepass")) + 1
    return starts


def heading_starts(text: str, offsets: list[int]) -> list[int | None]:
    """The character offsets of *text* that MediaWiki's ``byteoffset`` values for its headings stand for
    (``None`` for one where no heading starts).

    MediaWiki 1.39 counts them in code points, later versions in UTF-8 bytes.  The unit is decided once for the
    page, as the one that puts more of them at a heading's start: decided per offset, a byte offset could land
    on another heading's code-point offset, and that heading would be read twice and this one not at all.
    """
    def at_heading(start: int | None) -> bool:
        return start is not None and 0 <= start < len(text) and text[start] == "=" and (
            start == 0 or text[start - 1] == "\n")

    starts = _byte_line_starts(text)
    in_bytes = [starts.get(offset) for offset in offsets]
    chosen = in_bytes if sum(map(at_heading, in_bytes)) > sum(map(at_heading, offsets)) else offsets
    return [start if at_heading(start) else None for start in chosen]


def _hidden_by(tag: str, attrs: list[tuple[str, str | None]]) -> str | None:
    """Why an element keeps what it holds from a reader's eyes, or ``None``."""
    values = {name.lower(): value or "" for name, value in attrs}
    style = values.get("style", "")
    if hiding(style):
        return f'<{tag} style="{style.strip()[:80]}">'
    hiding_classes = sorted(HIDING_CLASSES & set(values.get("class", "").split()))
    if hiding_classes:
        return f'<{tag} class="{" ".join(hiding_classes)}">'
    if "hidden" in values:
        return f"<{tag} hidden>"
    return None


class _OpenElements(HTMLParser):
    """Parsed HTML read with the elements open at each point (*stack*): each tag beside what a reader needs of it
    (what hides it, whether it is collapsible); an end tag closes it and every element opened inside it."""

    VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "col", "source", "area", "base", "embed", "track"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, object]] = []

    def handle_endtag(self, tag: str) -> None:
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index][0] == tag:
                del self.stack[index:]
                return


class _Where(_OpenElements):
    """Where a word lands in parsed HTML: the elements around it that hide it, and the last heading above it that
    a reader sees (a hidden one heads nothing they see: what follows it reads as under the heading before), of
    level *level* or higher (a subsection's reply reads as under its own ``<h3>``, a section's under its
    ``<h2>`` whatever subheadings stand in its thread)."""

    def __init__(self, word: str, level: int = 2) -> None:
        super().__init__()
        self.word = word
        self.levels = {f"h{number}" for number in range(1, level + 1)}
        #: The anchor of the latest heading (of *level* or higher) begun that nothing hides.
        self.heading: str | None = None
        self.in_heading: str | None = None
        self.found: list[tuple[str | None, str | None]] = []

    def _hiding(self) -> str | None:
        return next((reason for _, reason in self.stack if reason), None)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        self.stack.append((tag, _hidden_by(tag, attrs)))
        values = dict(attrs)
        # MediaWiki 1.39 puts the anchor on a span inside, later versions on the heading
        if tag in self.levels and self.in_heading is None and self._hiding() is None:
            self.in_heading = tag
            self.heading = values.get("id") or ""
        if self.in_heading and values.get("id") and "mw-headline" in (values.get("class") or "").split():
            self.heading = values["id"] or ""

    def handle_endtag(self, tag: str) -> None:
        super().handle_endtag(tag)
        if tag == self.in_heading:
            self.in_heading = None

    def handle_data(self, data: str) -> None:
        for _ in range(data.count(self.word)):
            self.found.append((self.heading, self._hiding()))


def visibility_problems(rendered: str, word: str, anchor: str | None, level: int = 2) -> list[str]:
    """How the reply, marked by *word* in the *rendered* page, fails to show in the section whose heading's
    anchor is *anchor* (of *level*): hidden, missing, or under another heading."""
    where = _Where(word, level)
    where.feed(rendered)
    where.close()
    if len(where.found) != 1:
        return [f"the reply would not render in the page (its signature shows {len(where.found)} times, not once)"]
    heading, hiding = where.found[0]
    problems = []
    if hiding:
        problems.append(f"the reply would be hidden from readers (inside {hiding})")
    if anchor is not None and heading != anchor:
        problems.append(f"the reply would show under another heading ({heading or 'none'!r}, not {anchor!r})")
    return problems


class _Around(_OpenElements):
    """The elements open around each occurrence of a word in parsed HTML, as ``tag`` or ``tag.class``."""

    def __init__(self, word: str) -> None:
        super().__init__()
        self.word = word
        self.found: list[list[str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            classes = (dict(attrs).get("class") or "").split()
            self.stack.append((tag, f"{tag}.{classes[0]}" if classes else tag))

    def handle_data(self, data: str) -> None:
        for _ in range(data.count(self.word)):
            self.found.append([str(name) for _, name in self.stack])


def elements_around(rendered: str, word: str) -> list[list[str]]:
    """For each time *word* shows in *rendered* HTML, the elements it stands in, outermost first (``p``,
    ``div.mw-parser-output``): where a reader sees it, read from the structure alone, never from a style."""
    around = _Around(word)
    around.feed(rendered)
    around.close()
    return around.found


def section_heading(parsed: dict, text: str, start: int) -> tuple[str, int] | None:
    """The anchor and level of the page's own section whose heading starts at character *start* of *text*."""
    listed = [item for item in parsed.get("sections", [])
              if str(item.get("index", "")).isdigit() and item.get("byteoffset") is not None]
    for item, found in zip(listed, heading_starts(text, [int(item["byteoffset"]) for item in listed])):
        if found == start:
            level = str(item.get("level", "2"))
            return str(item.get("anchor", "")), max(int(level), 2) if level.isdigit() else 2
    return None


def heading_above(rendered: str, word: str, level: int = 2) -> str | None:
    """The anchor of the last heading (of *level* or higher) a reader sees before *word*, shown once in the
    *rendered* page; else ``None``."""
    where = _Where(word, level)
    where.feed(rendered)
    where.close()
    return where.found[0][0] if len(where.found) == 1 else None


class _Outside(_OpenElements):
    """The text of parsed HTML that lies outside every collapsible element."""

    def __init__(self) -> None:
        super().__init__()
        self.outside: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID:
            return
        collapsible = any(name == "class" and value and "mw-collapsible" in value.split() for name, value in attrs)
        self.stack.append((tag, collapsible))

    def handle_data(self, data: str) -> None:
        if not any(collapsible for _, collapsible in self.stack):
            self.outside.append(data)

    @classmethod
    def text(cls, html: str) -> str:
        reader = cls()
        reader.feed(html)
        reader.close()
        return " ".join("".join(reader.outside).split())


_BLOCK_START = re.compile(r"""<div\s[^<>]*class=["'][^"']*\bmw-collapsible\b""", re.IGNORECASE)
_DIV = re.compile(r"<(/?)div\b", re.IGNORECASE)


def _block(reply: str) -> tuple[int, int] | None:
    """Where the reply's collapsible block lies in its wikitext: from its ``<div`` to its matching ``</div>``."""
    start = _BLOCK_START.search(reply)
    if start is None:
        return None
    depth = 0
    for tag in _DIV.finditer(reply, start.start()):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return start.start(), reply.index(">", tag.end()) + 1
    return start.start(), len(reply)


def trace_problems(site: pywikibot.site.APISite, title: str, reply: str, alone: str) -> list[str]:
    """How the reply's collapsible block fails to hold its content, as MediaWiki renders it (*alone*: the reply
    rendered alone, :data:`SENTINEL` in a paragraph after it).

    The block must close inside the reply (a paragraph after the reply is not
    swallowed), and nothing written inside it may render outside it: the
    reply's text outside collapsible elements equals that of the reply with
    the block cut out.
    """
    block = _block(reply)
    if block is None:
        return []
    rendered = _Outside.text(alone)
    problems = []
    if not rendered.endswith(SENTINEL):
        problems.append("the reply's collapsible block is not closed")
    without = reply[:block[0]] + reply[block[1]:]
    expected = _Outside.text(parse(site, title, text=without + "\n\n" + SENTINEL, props="text")["text"])
    if rendered.endswith(SENTINEL) and rendered != expected:
        problems.append("text of the reply's collapsible block renders outside it")
    return problems


#: Classes MediaWiki's parser gives elements of its own accord: links of every kind, empty paragraphs, headings.
PARSER_CLASSES = frozenset({"mw-parser-output", "external", "text", "free", "autonumber", "new", "mw-redirect",
                            "extiw", "mw-selflink", "selflink", "mw-disambig", "mw-empty-elt", "mw-headline"})
#: The classes Pygments gives the tokens of a highlighted block (``k``, ``nv``, ``s2``...).
_HIGHLIGHT_TOKEN = re.compile(r"[a-z]{1,3}[0-9]?")


@dataclass(frozen=True)
class Element:
    """One element of parsed HTML: its tag, style, classes, and whether it lies in a highlighted code block."""

    tag: str
    style: str
    classes: tuple[str, ...]
    hidden: bool
    in_highlight: bool


class _Elements(_OpenElements):
    """Every element of parsed HTML (:class:`Element`), and the elements open where a *sentinel* text stands."""

    def __init__(self, sentinel: str = "") -> None:
        super().__init__()
        self.sentinel = sentinel
        self.elements: list[Element] = []
        self.around_sentinel: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        classes = tuple(values.get("class", "").split())
        in_highlight = any(highlight for _, highlight in self.stack)
        self.elements.append(Element(tag, values.get("style", ""), classes, "hidden" in values, in_highlight))
        if tag not in self.VOID:
            self.stack.append((tag, in_highlight or "mw-highlight" in classes))

    def handle_data(self, data: str) -> None:
        if self.sentinel and self.sentinel in data and self.around_sentinel is None:
            self.around_sentinel = [tag for tag, _ in self.stack]

    @classmethod
    def of(cls, html: str) -> list[Element]:
        reader = cls()
        reader.feed(html)
        reader.close()
        return reader.elements


def _out_of_box(element: Element, allowance: Allowance) -> str | None:
    """Why *element* of a reply is not one the bot's own markup makes: a style or a class that markup does not bring
    on this wiki (a style may move or hide anything, and a wiki's style sheets may by class), or ``hidden``."""
    if style_key(element.style) not in allowance.styles:
        return f'<{element.tag} style="{element.style.strip()[:80]}"> (a style the bot\'s own markup does not use)'
    for name in element.classes:
        if name not in allowance.classes and name not in PARSER_CLASSES and not (
                element.in_highlight and not element.style and _HIGHLIGHT_TOKEN.fullmatch(name)):
            return f'<{element.tag} class="{name}"> (a class the bot\'s own markup does not use)'
    if element.hidden:
        return f"<{element.tag} hidden>"
    return None


def box_problems(rendered: str, allowance: Allowance) -> list[str]:
    """How the reply, *rendered* alone with :data:`SENTINEL` in a paragraph after it, fails to stay inside its own
    box: an element of it that could render outside it or over other text, or hide its text, and any element it
    leaves open (the text after the reply would render inside it)."""
    reader = _Elements(SENTINEL)
    reader.feed(rendered)
    reader.close()
    problems = [f"an element of the reply would render outside it or hide text: {reason}"
                for reason in dict.fromkeys(filter(None, (_out_of_box(element, allowance)
                                                          for element in reader.elements)))]
    left_open = [tag for tag in (reader.around_sentinel or [])[1:] if tag != "p"]
    if reader.around_sentinel is None or left_open:
        problems.append(f"the reply leaves elements open, so the text after it would render inside them: "
                        f"{left_open or 'the text after it does not show'}")
    return problems[:5]


def transformed_reply(reply: str, signature: str, timestamp: str) -> str:
    """The reply as the pre-save transform must leave it: only its own ``~~~~``, the last one, expanded (one
    inside a ``<nowiki>`` block is text, and stays)."""
    head, _, tail = reply.rpartition("~~~~")
    return f"{head}{signature} {timestamp}{tail}"


def checked_text(site: pywikibot.site.APISite, title: str, old: str, base: int | None, point: int, reply: str,
                 allowance: Allowance, *, added_sections: tuple[tuple[str, str], ...] = (),
                 section_start: int | None = None, addressed: frozenset[str] = frozenset(),
                 answers: int | None = None) -> CheckedEdit:
    """The exact text to save: old text plus reply, transformed and verified by the wiki; or :class:`EditRefused`.

    *point* is where the reply goes in *old*; the new text is
    ``old[:point] + "\\n" + reply + old[point:]``.  The signature and its
    time are expanded in the same request as the page, so they match.
    *base* is the revision *old* was read from (``None``: the page does not
    exist yet); *added_sections* the sections the reply may add at the
    page's end (a draft on the review page).
    *section_start* is where the asker's section's heading starts: the
    reply must show under that heading, or under the one the text it
    answers shows under, which ends at *answers* in *old* (a signature's
    end, before *point*).  *addressed*: the user pages the reply may link
    once (see :func:`differences`).
    """
    reply = reply.rstrip("\n")
    if "~~~~" not in reply:
        raise EditRefused("the reply has no signature")
    allowance = replace(allowance, own_external_links=own_external_links(reply, allowance.engine_pages))
    new = old[:point] + "\n" + reply + old[point:]
    signature, timestamp, transformed = pre_save_transform(site, title, "~~~\n~~~~~\n" + new).split("\n", 2)
    signed = transformed_reply(reply, signature, timestamp)
    expected = old[:point] + "\n" + signed + old[point:]
    if transformed != expected.rstrip():
        raise EditRefused(_first_difference("MediaWiki's pre-save transform changes more than the signature",
                                            expected.rstrip(), transformed))
    before = Rendering.from_parse(parse(site, title, oldid=base) if base else parse(site, title, text=old))
    word = "SpinachShown" + secrets.token_hex(6)  # parsed, never saved: marks where the reply renders
    marked = old[:point] + "\n" + transformed_reply(reply, signature, timestamp + word) + old[point:]
    parsed = parse(site, title, text=marked.rstrip())
    after = Rendering.from_parse(parsed)
    found = differences(before, after, allowance, len(COLLAPSIBLE.findall(reply)), added_sections, addressed)
    if found and base:  # the stored parse of the revision may predate a change of a template it uses: parse afresh
        before = Rendering.from_parse(parse(site, title, text=old))
        found = differences(before, after, allowance, len(COLLAPSIBLE.findall(reply)), added_sections, addressed)
    alone = parse(site, title, text=signed + "\n\n" + SENTINEL, props="text")["text"]
    found += trace_problems(site, title, signed, alone)
    found += box_problems(alone, allowance)
    heading = section_heading(parsed, marked, section_start) if section_start is not None else None
    if section_start is not None and heading is None:
        found.append("MediaWiki does not read the reply's section as a section of the page")
    anchor, level = heading if heading is not None else (None, 2)
    rendered = parsed.get("text", "")
    if anchor is not None and answers is not None and answers <= point \
            and heading_above(rendered, word, level) != anchor:
        # The text answered may show under a heading something between it and its section's heading renders (a
        # follow-up below a gallery's caption): beside that text is where its reader finds the reply.
        answered = "SpinachAnswered" + secrets.token_hex(6)
        both = parse(site, title, text=(marked[:answers] + answered + marked[answers:]).rstrip(), props="text")["text"]
        shown = heading_above(both, answered, level)
        if shown is not None and shown == heading_above(both, word, level):
            anchor = shown
    found += visibility_problems(rendered, word, anchor, level)
    if found:
        raise EditRefused("MediaWiki's parser shows the edit would do more than add the reply: " + "; ".join(found),
                          unexpected_items(before, after, allowance))
    return CheckedEdit(text=transformed, reply=signed, point=point)


def sections_of(site: pywikibot.site.APISite, title: str, text: str) -> tuple[tuple[str, str], ...]:
    """The sections MediaWiki finds in *text* alone."""
    return Rendering.from_parse(parse(site, title, text=text, props="sections")).sections


def _first_difference(what: str, expected: str, actual: str) -> str:
    at = next((index for index, (a, b) in enumerate(zip(expected, actual)) if a != b),
              min(len(expected), len(actual)))
    return f"{what} (first difference at character {at}: {actual[at:at + 40]!r} instead of {expected[at:at + 40]!r})"


#: The last part of a title that names an item, a property or a lexeme (``Q42``, ``Q/Q42``, ``Item:P31``): a
#: page per item when a template brings it in for the item it shows.
_ITEM_PAGE = re.compile(r"(?:^|[:/])" + PAGE_ID + "$")


@dataclass(frozen=True)
class Cause:
    """A template call of the reply's own markup (or of the bot's signature) that, parsed alone on this wiki,
    brings in something the edit check refused: which template it is, what it brings, and what the operator can
    change."""

    #: The call as the reply writes it (``{{Q|Q42}}``) and the template it calls, as MediaWiki names it.
    call: str
    template: str
    #: What it brings in that the reply's own markup does not add on the sample.
    brings: tuple[str, ...]
    #: Whether the call is the bot's signature's, not the reply's.
    in_signature: bool = False

    @property
    def per_item(self) -> bool:
        """Whether it brings in a page per item (``{{:Q42}}``, ``{{Q/Q42}}``)."""
        return any(_ITEM_PAGE.search(title) and "://" not in title for title in self.brings)

    @property
    def role(self) -> str:
        """What the call does in the reply, read from the markup the renderer writes: ``item``, ``query``,
        ``address`` or ``other``."""
        name = self.call[2:].split("|", 1)[0].strip().lower()
        return {"q": "item", "p": "item", "sparql": "query", "re": "address"}.get(name, "other")

    def advice(self) -> str:
        """The sentence an operator reads: which template, what it brings, what the bot does instead and what to
        change to have the template again."""
        brings = ", ".join(self.brings[:3]) + (" …" if len(self.brings) > 3 else "")
        if self.per_item:
            brings += " (a page per item)"
        short = self.template.split(":", 1)[-1]
        said = f"{self.template} brings in {brings}, which the reply's own markup does not add on the sample"
        if self.in_signature:
            return f"the bot's signature calls {said}: no form of the reply avoids it; change the signature"
        instead = {"item": "replies write items as links instead",
                   "query": "replies show the query as a text block and a link instead",
                   "address": "replies address the asker with a link to their user page instead"}.get(
                       self.role, "replies are written without templates instead")
        fix = (f"make {self.template} show its item without transcluding a page" if self.per_item and
               self.role == "item" else f"make {self.template} bring in nothing more than it does on the sample")
        return f"{said}: {instead}; to have {{{{{short}}}}} again, {fix}"


def top_level_calls(text: str) -> list[str]:
    """The template calls ``{{…}}`` of *text* that no other call holds, in order, found in one linear pass: the
    reply's own calls (a stranger's text in a reply is encoded, and holds no braces)."""
    calls, depth, start = [], 0, 0
    for token in re.finditer(r"\{\{|\}\}", text):
        if token.group() == "{{":
            start = token.start() if depth == 0 else start
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                calls.append(text[start:token.end()])
    return list(dict.fromkeys(calls))


def brought_by(site: pywikibot.site.APISite, title: str, call: str) -> tuple[str, frozenset[str]]:
    """The template *call* parsed alone on *title*: the template it calls, as MediaWiki names it, and every
    template, link, external link, category and image it brings in besides."""
    parsed = Rendering.from_parse(parse(site, title, text=call, props="templates|links|externallinks|categories|"
                                                                      "images|iwlinks"))
    name = call[2:].split("|", 1)[0].split("}}", 1)[0].strip()
    try:
        template = pywikibot.Page(pywikibot.Link(name, site, default_namespace=10)).title()
    except pywikibot.exceptions.Error:  # a parser function or a magic word: it calls no page
        template = name
    return template, (parsed.templates - {template}) | parsed.links | parsed.external_links | parsed.categories \
        | parsed.images


def template_causes(site: pywikibot.site.APISite, title: str, reply: str, signature: str, unexpected: frozenset[str],
                    cache: dict[str, tuple[str, frozenset[str]]] | None = None) -> list[Cause]:
    """The templates called by *reply* and by the bot's *signature* (as the pre-save transform writes ``~~~``) that
    bring in any of *unexpected* (what the edit check refused, :attr:`EditRefused.unexpected`), one :class:`Cause`
    a template, found by asking MediaWiki to parse each call alone, never by its name.  *cache* keeps each call's
    answer between replies."""
    cache = {} if cache is None else cache
    calls = [(call, False) for call in top_level_calls(reply.replace("~~~~", ""))]
    calls += [(call, True) for call in top_level_calls(signature)]
    causes: dict[str, Cause] = {}
    for call, in_signature in calls:
        if call not in cache:
            cache[call] = brought_by(site, title, call)
        template, brought = cache[call]
        found = brought & unexpected
        if found:
            known = causes.get(template)
            brings = tuple(sorted(found | set(known.brings))) if known else tuple(sorted(found))
            causes[template] = Cause(known.call if known else call, template, brings, in_signature)
    return list(causes.values())
