"""MediaWiki's reading of the forum page, and the bot's own heading rules checked against it on the real wiki.

Each heading look-alike of ``tests/fixtures/forum/heading_lookalikes.json`` (the cases of the forum's
history, trailing and leading characters, every level, templates, tables, tags, entities) is saved on the
test wiki; where MediaWiki says the page's own sections start (``action=parse&prop=sections``) must be
where :func:`bot.forum.find_headings` finds them, and :func:`bot.sections.read_sections` must hand the bot
MediaWiki's reading, logging any disagreement.
"""

import json
import logging

import pytest

from bot.forum import find_headings, parse_sections
from bot.sections import extension_tags, read_sections
from tests.support.paths import FIXTURES

pytestmark = [pytest.mark.mediawiki, pytest.mark.xdist_group("wiki")]
LOOKALIKES = json.loads((FIXTURES / "forum" / "heading_lookalikes.json").read_text())


def pages() -> list[list[dict]]:
    """The look-alikes that can share a page, on one page; each that hides what follows it, on its own."""
    return [[case for case in LOOKALIKES if not case.get("alone")]] + [[case] for case in LOOKALIKES
                                                                        if case.get("alone")]


def compose(cases: list[dict]) -> str:
    return "Lead of the page.\n" + "".join(f"== Case {case['name']} ==\n{case['text']}\nbody\n" for case in cases) \
        + "== End ==\nlast\n"


def own_sections(mediawiki, title: str) -> list[tuple[int, int]]:
    """(character offset, level) of each of the page's own sections, as MediaWiki lists them."""
    parsed = mediawiki.api(action="parse", page=title, prop="sections")["parse"]["sections"]
    return [(section["byteoffset"], int(section["level"])) for section in parsed
            if str(section["index"]).isdigit() and section["byteoffset"] is not None]


def case_at(text: str, cases: list[dict], offset: int) -> str:
    """The look-alike whose part of the page holds *offset*."""
    owner = "the lead"
    for case in cases:
        start = text.find(f"== Case {case['name']} ==\n")
        if 0 <= start <= offset:
            owner = case["name"]
    return owner


@pytest.mark.parametrize("number", range(len(pages())))
def test_the_bots_heading_rules_read_each_look_alike_as_mediawiki_does(mediawiki, site, number):
    cases = pages()[number]
    title = f"Wikidata:Sections/look-alikes {number}"
    mediawiki.edit_as_human(title, compose(cases))
    text = mediawiki.page_text(title)
    theirs = set(own_sections(mediawiki, title))
    ours = {(heading.start, heading.level) for heading in find_headings(text, extension_tags(site))}
    wrong = sorted({case_at(text, cases, offset) for offset, _ in theirs ^ ours})
    assert not wrong, f"the bot's rules and MediaWiki disagree on {wrong}: MediaWiki {sorted(theirs - ours)}, " \
                      f"the bot {sorted(ours - theirs)}"


def test_the_forums_look_alikes_are_no_sections(mediawiki, site):
    """The issue's page: sections A and E only."""
    text = ("== A ==\nQ?\n=> I mean\n== B ==<nowiki/>\nx\n== C ==\u00a0\ny\n<includeonly>\n== D ==\n</includeonly>\n"
            "== E ==")
    mediawiki.edit_as_human("Wikidata:Sections/forum", text)
    revision = mediawiki.revisions("Wikidata:Sections/forum")[0]["revid"]
    assert [section.heading for section in parse_sections(text)] == ["A", "E"]
    reading = read_sections(site, "Wikidata:Sections/forum", revision, text)
    assert [(heading.title, heading.start) for heading in reading.headings] == [("A", 0), ("E", text.index("== E"))]


def test_offsets_are_found_past_any_character(mediawiki, site):
    text = "Lead: é € 😀 \u200f\n== Première ==\nQuestion ? \u00e9\n== 😀 Second ==\nx\n"
    mediawiki.edit_as_human("Wikidata:Sections/offsets", text)
    revision = mediawiki.revisions("Wikidata:Sections/offsets")[0]["revid"]
    reading = read_sections(site, "Wikidata:Sections/offsets", revision,
                            mediawiki.page_text("Wikidata:Sections/offsets"))
    assert [(heading.start, heading.shown) for heading in reading.headings] == [
        (text.index("== Premi"), "Première"), (text.index("== 😀"), "😀 Second")]


def test_a_disagreement_is_logged_and_mediawiki_decides(mediawiki, site, caplog):
    # A tag left open over several lines hides the headings inside it from MediaWiki's sections (they still
    # show, as headings that are not sections); the bot's rules cannot see that far.
    text = "== Asked ==\nQ?\n<pre\n== Inside ==\nx\n== Next ==\ny\n<nowiki>z</nowiki>\n"
    title = "Wikidata:Sections/disagreement"
    mediawiki.edit_as_human(title, text)
    revision = mediawiki.revisions(title)[0]["revid"]
    with caplog.at_level(logging.WARNING, logger="bot.sections"):
        reading = read_sections(site, title, revision, mediawiki.page_text(title))
    assert [heading.title for heading in reading.headings] == ["Asked"]
    assert [section.heading for section in parse_sections(text)] == ["Asked", "Inside", "Next"]
    assert "the bot's rules read a heading MediaWiki does not" in caplog.text and "== Inside ==" in caplog.text


def test_a_template_that_shows_a_heading_is_known(mediawiki, site):
    mediawiki.edit_as_human("Template:Archived note", "== Archived ==\nThis thread is closed.\n")
    text = "== Asked ==\nQ? [[User:Alice|Alice]] 12:00, 20 November 2026 (UTC)\n{{Archived note}}\n"
    mediawiki.edit_as_human("Wikidata:Sections/template", text)
    revision = mediawiki.revisions("Wikidata:Sections/template")[0]["revid"]
    reading = read_sections(site, "Wikidata:Sections/template", revision, text)
    assert [heading.title for heading in reading.headings] == ["Asked"]
    assert reading.heading_templates == {"Archived note"}


def test_the_wikis_extension_tags_are_read_with_those_known_by_their_syntax(mediawiki, site):
    text = "== Asked ==\nQ? [[User:Alice|Alice]] 12:00, 20 November 2026 (UTC)\n"
    mediawiki.edit_as_human("Wikidata:Sections/tags", text)
    revision = mediawiki.revisions("Wikidata:Sections/tags")[0]["revid"]
    tags = read_sections(site, "Wikidata:Sections/tags", revision, text).extension_tags
    assert {"ref", "poem", "gallery", "indicator", "templatedata"} <= tags  # the test wiki's own
    assert {"score", "math", "chem", "timeline"} <= tags  # known by their syntax, though this wiki lacks them
