"""Where a revision's sections start, as MediaWiki reads it.

``action=parse&prop=sections`` on the revision the bot read lists every
heading the page shows.  The page's own ones have a number as their
``index`` and a ``byteoffset``; those a template brings (``T-1``) or that the
preprocessor does not count as sections (a heading after a comment, inside a
template's argument) have none.  MediaWiki 1.39 counts ``byteoffset`` in
code points, later versions may count UTF-8 bytes: each offset is taken in
whichever unit puts it at the start of a line of ``=``, and one that fits
neither is reported.

The bot's own reading (:func:`bot.forum.find_headings`) is compared with
MediaWiki's at every read; where they disagree the disagreement is logged and
MediaWiki's reading is the one used.
"""

from __future__ import annotations

import dataclasses
import html
import logging
import re

import pywikibot

from bot.edit_check import heading_starts, parse
from bot.forum import Heading, Reading, find_headings, heading_text
from bot.wikiparse import INERT_TAGS

log = logging.getLogger(__name__)


def _shown(line: str) -> str:
    """A heading's ``line`` (HTML) as the text its anchor is made of: tags left out, entities decoded."""
    return " ".join(html.unescape(re.sub(r"<[^>]*>", "", line)).split())


def extension_tags(site: pywikibot.site.APISite) -> frozenset[str]:
    """The wiki's extension tags (``<pre>``, ``<nowiki>``, ``<syntaxhighlight>``...), and ``includeonly``."""
    try:
        listed = site.siteinfo.get("extensiontags", [])
    except pywikibot.exceptions.Error:
        return INERT_TAGS
    return frozenset(tag.strip("<>").lower() for tag in listed) | {"includeonly"} if listed else INERT_TAGS


def read_sections(site: pywikibot.site.APISite, title: str, revision: int, text: str) -> Reading:
    """MediaWiki's reading of *revision* of *title*, whose text is *text*; disagreements with the bot's
    own reading are logged."""
    listed = parse(site, title, oldid=revision, props="sections").get("sections", [])
    own = {heading.start: heading for heading in find_headings(text, extension_tags(site))}
    headings: list[Heading] = []
    templates = {pywikibot.Page(site, item["fromtitle"]).title(with_ns=False) for item in listed
                 if str(item.get("index", "")).startswith("T-") and item.get("fromtitle")}
    listed = [item for item in listed if str(item.get("index", "")).isdigit() and item.get("byteoffset") is not None]
    for item, start in zip(listed, heading_starts(text, [int(item["byteoffset"]) for item in listed])):
        if start is None:
            log.warning("MediaWiki places the heading %r of %s revision %d at offset %s, where no heading starts; "
                        "it is left out", item.get("line", ""), title, revision, item["byteoffset"])
            continue
        level, shown = int(item.get("level") or 2), _shown(str(item.get("line", "")))
        if start in own:
            headings.append(dataclasses.replace(own[start], level=level, shown=shown))
            continue
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        line = re.sub(r"<!--.*?-->", lambda found: " " * len(found.group()), text[start:end]).rstrip(" \t")
        headings.append(Heading(start, end, level, heading_text(text[start + level:start + len(line) - level]),
                                shown))
    reading = Reading(headings, frozenset(templates), extension_tags(site) | INERT_TAGS)
    _compare(title, revision, text, own, reading)
    return reading


def _compare(title: str, revision: int, text: str, own: dict[int, Heading], reading: Reading) -> None:
    """Log where the bot's own heading rules read *text* otherwise than MediaWiki did."""
    theirs = {heading.start: heading for heading in reading.headings}
    for start in sorted(own.keys() ^ theirs.keys()):
        end = text.find("\n", start)
        line = text[start:end if end != -1 else len(text)][:120]
        who = "MediaWiki reads a heading the bot's rules do not" if start in theirs else \
            "the bot's rules read a heading MediaWiki does not"
        log.warning("%s on %s revision %d, at %r; MediaWiki's reading is used", who, title, revision, line)
