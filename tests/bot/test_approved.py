"""An approved draft read back as data and rendered again by the bot (:mod:`bot.approved`).

The reply a reviewer leaves untouched is posted exactly as the bot wrote it, in every shape the renderer writes
(the query in its template or in a text block, a cut preview, no preview, steps, another language).  What a
reviewer changes comes back as words, a query or cells, never as markup: the same inert-markup judge the
renderer's own tests use (mwparserfromhell's reading of templates, links, tags, headings) finds nothing in a
reviewer's hostile line that the bot's own reply does not hold.  MediaWiki and a browser judge the posted reply
in ``tests/bot/test_reply_box.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.trace import AgentResult, Step, StopReason, Usage
from agent.text import clean
from bot.approved import PartKind, query_of, rerender, split_parts
from bot.reply_sample import sample_reply
from bot.render import render_reply
from tests.bot.test_render import HOSTILE, QUERY, active_markup, result
from tests.bot.test_reply_box import HOSTILE_DRAFT_LINES

SIGNATURE = " ~~~~"


def unsigned(reply: str) -> str:
    assert reply.endswith(SIGNATURE)
    return reply[:-len(SIGNATURE)]


def replies() -> dict[str, str]:
    """Replies of every shape the renderer writes."""
    german = AgentResult("q", "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }", [{"x": {"type": "uri", "value":
                         "http://www.wikidata.org/entity/Q42"}}], ["x"],
                         [Step("Suchen.", "execute_sparql", "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }", "x\nQ42")],
                         StopReason.STOP, "Die Abfrage findet Menschen.", Usage(llm_calls=1), language="de")
    refused = AgentResult("q", None, None, [], [Step("Look.", "search_wikidata", "x", "No entities or "
                          "properties found.")], StopReason.CANNOT_ANSWER, "Wikidata has no such data.",
                          Usage(llm_calls=2))
    return {"sample": unsigned(sample_reply()), "hostile text block": unsigned(render_reply(result())),
            "hostile, follow-up": unsigned(render_reply(result(explanation=HOSTILE), depth=2)),
            "German": unsigned(render_reply(german)), "cannot answer": unsigned(render_reply(refused))}


@pytest.mark.parametrize("name", list(replies()))
def test_an_untouched_draft_is_posted_exactly_as_the_bot_wrote_it(name):
    written = replies()[name]
    again = rerender(written, written, "Try it!")
    assert again.text == written and not again.changed


def test_the_parts_are_the_templates_query_preview_steps_words_and_footer():
    kinds = [part.kind for part in split_parts(unsigned(sample_reply()))]
    assert kinds == [PartKind.WORDS, PartKind.QUERY, PartKind.PREVIEW, PartKind.WORDS, PartKind.STEPS,
                     PartKind.FOOTER] or kinds == [PartKind.WORDS, PartKind.QUERY, PartKind.PREVIEW, PartKind.STEPS,
                                                   PartKind.FOOTER]
    [query] = [part for part in split_parts(unsigned(render_reply(result()))) if part.kind == PartKind.QUERY]
    assert query_of(query) == clean(QUERY).strip()  # a text block's query read back as it was shown


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=200))
def test_any_explanation_the_model_writes_comes_back_unchanged(explanation):
    written = unsigned(render_reply(result(explanation=explanation)))
    assert rerender(written, written, "Try it!").text == written


def bots_own(written: str) -> dict:
    return active_markup(written + SIGNATURE)


@pytest.mark.parametrize("line", HOSTILE_DRAFT_LINES + [HOSTILE.replace("\n", " ")])
def test_a_reviewers_markup_is_posted_as_text(line):
    written = unsigned(sample_reply())
    approved = written.replace(":The query below", f":{line}\n:Checked. The query below", 1)
    again = rerender(written, approved, "Try it!")
    own, posted = bots_own(written), active_markup(again.text + SIGNATURE)
    assert posted["templates"] <= own["templates"] and posted["tags"] <= own["tags"], (line, posted)
    assert posted["links"] == own["links"] and posted["headings"] == [] and posted["comments"] == []
    assert posted["external"] == own["external"]
    assert ":Checked. The query below" in again.text
    assert again.changed or "&#" in line  # a line of entities alone is text already: nothing to say


def test_the_review_page_is_told_which_markup_shows_as_text():
    written = unsigned(sample_reply())
    approved = written.replace(":The query below", ':<span style="color:#fff">Hidden</span> The query below', 1)
    assert rerender(written, approved, "Try it!").shown_as_text == ['<span style="color:#fff">Hidden</span> The '
                                                                    'query below find…']


def test_plain_words_and_item_links_go_as_written():
    written = unsigned(sample_reply())
    approved = written.replace(":The query below", ":Checked against {{Q|Q42}} and [[Q5|humans]]; it's fine.\n"
                                                   ":The query below", 1)
    again = rerender(written, approved, "Try it!")
    assert ":Checked against {{Q|Q42}} and [[Q5|humans]]; it's fine." in again.text and not again.changed


def test_a_changed_query_is_shown_again_by_the_bot_in_the_template_or_a_text_block():
    written = unsigned(sample_reply())
    fixed = written.replace("LIMIT 10", "LIMIT 20", 1)
    assert "LIMIT 20\n}}" in rerender(written, fixed, "Try it!").text
    hostile = written.replace("LIMIT 10", 'LIMIT 10 }} <div style="position:fixed">{{#time:U}}', 1)
    again = rerender(written, hostile, "Ausprobieren!")
    [query] = [part for part in split_parts(again.text) if part.kind == PartKind.QUERY]
    assert query.source.startswith(':<div class="mw-code">') and "Ausprobieren!]" in query.source
    assert "<div style" not in query.source and "{{#time" not in query.source


def test_the_preview_keeps_what_the_reviewer_left_and_writes_its_cells_again():
    written = unsigned(sample_reply())
    one_row = written.replace("|-\n| {{Q|Q42}} || 1952-03-11\n", "", 2)
    again = rerender(written, one_row, "Try it!")
    assert again.text.count("{{Q|Q42}}") == 1 and not again.changed
    styled = written.replace("| {{Q|Q42}} || 1952-03-11", '| style="position:fixed" | {{Q|Q42}} || <b>x</b>', 1)
    again = rerender(written, styled, "Try it!")
    assert '| style="position:fixed" |' not in again.text and "&lt;b>x&lt;/b>" in again.text
    assert 'style="position:fixed" &#124; {{Q|Q42}}' in again.text and again.shown_as_text  # shown as text
    no_table = "\n".join(line for line in written.split("\n") if not line.startswith(("|", "!", ":{|")))
    assert "wikitable" not in rerender(written, no_table, "Try it!").text


def test_the_steps_and_the_footer_are_the_bots_own():
    written = unsigned(sample_reply())
    footer = written.rsplit("\n", 1)[1]
    approved = written.replace("Find the item.", "Find the item. <div style=\"zoom:50\">", 1).replace(
        "\n" + footer, "", 1) + "\n:<small>Written by a person.</small>"
    again = rerender(written, approved, "Try it!")
    assert again.text.endswith("\n" + footer) and "Written by a person" not in again.text
    assert "zoom:50" not in again.text and "Find the item." in again.text
    assert set(again.kept) == {PartKind.STEPS, PartKind.FOOTER}


@pytest.mark.parametrize("explanation", ["0\x85\x08", "Yes.\n\x08\nNo.", "\u2028"])
def test_an_explanation_line_with_nothing_to_show_makes_no_empty_line_and_comes_back_unchanged(explanation):
    written = unsigned(render_reply(result(explanation=explanation)))
    assert "\n:\n" not in written and rerender(written, written, "Try it!").text == written
