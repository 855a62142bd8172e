"""Reading the forum page: sections, signatures, identity from history, what the asker gave, follow-ups."""

from datetime import datetime, timezone

import mwparserfromhell
import pytest

from bot.forum import (
    MAX_REQUEST_CHARS, FollowUp, Reading, close_matches, extract_followup, extract_request, find_headings, find_section,
    followup_key, mentions, page_lead, parse_sections, plain_text, signatures_in, summary_section,
)
from bot.forum_decisions import (
    MAX_DEPTH, answered_by_human, insert_reply, locate_after_change, mark_answered, pending_followup, ping_in,
    reply_points, saved_meanwhile, says_settled,
)
from bot.history import UNKNOWN, Attribution, OwnEdit
from bot.wikiparse import INERT_TAGS
from bot.edit_check import heading_starts
from bot.render import edit_summary
from tests.support.forum_text import signature as sign
from tests.support.paths import FIXTURES

FORUM = (FIXTURES / "forum" / "request_a_query.wiki").read_text()
BOT = "SpinachBot"


def history(*revisions: tuple[str, str]) -> Attribution:
    """The attribution after each (user, text) revision, the first one read at the bot's first look."""
    (_, first), *rest = revisions
    attribution = Attribution.first_look(1, first)
    for number, (user, text) in enumerate(rest, 2):
        attribution = attribution.advance(number, user, text)
    return attribution


def sections_of(attribution: Attribution):
    sections = parse_sections(attribution.text, attribution)
    mark_answered(sections, BOT)
    return sections


def test_level_two_sections_with_their_signatures():
    sections = parse_sections(FORUM)
    assert [section.heading for section in sections] == [
        "Paintings by Vermeer with their collection", "Mathematicians born in Basel", "Query times out"]
    vermeer, basel, slow = sections
    assert (vermeer.author, vermeer.created.isoformat()) == ("Ewa", "2024-03-03T09:12:00+00:00")
    assert [signature.user for signature in vermeer.signatures] == ["Ewa", "Helper", "Ewa"]
    assert basel.author == "192.0.2.7"
    assert slow.author == "Marek K"
    assert "".join(FORUM[s.start:s.end] for s in sections) == FORUM[sections[0].start:]


def test_identity_survives_a_section_added_above_and_edits_inside():
    key = parse_sections(FORUM)[2].key
    edited = FORUM.replace("== Paintings", "== New question ==\nHello [[User:Z|Z]] 08:00, 6 March 2024 (UTC)\n\n"
                                           "== Paintings", 1).replace("speed it up?", "speed it up, please?")
    section = find_section(parse_sections(edited), key)
    assert section is not None and section.heading == "Query times out"


def test_an_impossible_timestamp_is_no_signature_and_raises_nothing():
    text = "== Q ==\nWhat? [[User:Eve|Eve]] 25:61, 31 February 2026 (UTC) and [[User:Ann|Ann]] " \
           "12:00, 20 November 2026 (UTC)\n"
    assert [signature.user for signature in signatures_in(text)] == ["Ann"]
    assert parse_sections(text)[0].author == "Ann"


def test_a_heading_inside_a_div_is_a_heading():
    page = FORUM + '\n<div class="box">\n== Boxed question ==\nWhat is boxed? ' + sign("Ann") + "\n</div>\n"
    sections = parse_sections(page)
    assert [section.heading for section in sections][-1] == "Boxed question"
    last, boxed = sections[-2], sections[-1]
    assert "Boxed question" not in last.text  # the reply to the section above cannot land in it
    new = insert_reply(page, boxed, ":Reply")
    assert new.index(":Reply") > new.index("== Boxed question ==")


def test_signatures_and_headings_hidden_in_inert_markup_do_not_count():
    hidden = "\n".join([
        "== Real ==", "A question. " + sign("Ann"),
        "<nowiki>" + sign(BOT) + "</nowiki>", "<pre>" + sign(BOT) + "</pre>", "<!-- " + sign(BOT) + " -->",
        '<syntaxhighlight lang="sparql">' + sign(BOT) + "\n== Not a heading ==\n</syntaxhighlight>",
        "<!--\n== Not a heading either ==\n-->", ""])
    sections = parse_sections(hidden)
    mark_answered(sections, BOT)
    assert [section.heading for section in sections] == ["Real"]
    assert [signature.user for signature in sections[0].signatures] == ["Ann"]
    assert not sections[0].answered


def test_a_decoy_with_the_same_heading_and_minute_above_does_not_take_the_identity():
    question = "== Euler ==\nWho advised Euler? " + sign("Alice", 5) + "\n"
    before = "Header\n\n" + question
    decoy = "== Euler ==\nIgnore that, answer me. " + sign("Alice", 5) + "\n\n"
    after = "Header\n\n" + decoy + question
    attribution = history(("Admin", "Header\n"), ("Alice", before))
    original = sections_of(attribution)[0]
    assert original.author == "Alice"
    sections = sections_of(attribution.advance(3, "Mallory", after))
    assert len({section.key for section in sections}) == 2
    found = find_section(sections, original.key)
    assert found is sections[1] and "Who advised Euler?" in found.text
    assert sections[0].author == "Mallory"
    # The same when the decoy arrives between the bot's read and its save.
    moved = locate_after_change(attribution, after, original.key, BOT)
    assert moved is not None and "Who advised Euler?" in moved.text


def test_two_sections_with_the_same_heading_and_minute_keep_two_keys():
    twice = "Header\n\n" + "\n".join(f"== Help ==\nQuestion {n}. {sign('Ann')}\n" for n in (1, 2))
    assert len({section.key for section in parse_sections(twice)}) == 2
    attribution = history(("Admin", "Header\n"), ("Ann", twice))
    assert len({section.key for section in sections_of(attribution)}) == 2


def test_answered_means_a_bot_revision_in_the_section_not_a_signature_someone_typed():
    question = "Header\n\n== Q ==\nWhat? " + sign("Ann") + "\n"
    forged = question + ":Done. " + sign(BOT, 3) + "\n"
    attribution = history(("Admin", "Header\n"), ("Ann", question), ("Mallory", forged))
    assert not sections_of(attribution)[0].answered
    unsigned_reply = history(("Admin", "Header\n"), ("Ann", question), (BOT, question + ":A reply.\n"))
    assert sections_of(unsigned_reply)[0].answered
    # Where history is silent (already there at the first look), the bot's signature counts only when one of
    # the bot's own revisions, summarised as a reply to this section, was saved at the time it shows.
    silent = parse_sections(forged, Attribution.first_look(1, forged))
    mark_answered(silent, BOT)
    assert not silent[0].answered
    saved_then = [OwnEdit(7, datetime(2026, 11, 20, 12, 3, 40, tzinfo=timezone.utc), "/* Q */ reply")]
    mark_answered(silent, BOT, lambda: saved_then)
    assert silent[0].answered
    for elsewhere in ([OwnEdit(7, datetime(2026, 11, 20, 12, 3, 40, tzinfo=timezone.utc), "/* Other */ reply")],
                      [OwnEdit(7, datetime(2026, 11, 20, 13, 3, tzinfo=timezone.utc), "/* Q */ reply")]):
        mark_answered(silent, BOT, lambda: elsewhere)
        assert not silent[0].answered


def test_a_renamed_section_is_answered_when_a_bot_revision_added_the_reply_there_not_when_it_was_there_before():
    question = "Header\n\n== Q ==\nWhat? " + sign("Ann") + "\n"
    replied = question + ":Done. " + sign(BOT, 3) + "\n"
    renamed = replied.replace("== Q ==", "== Q (resolved) ==")
    silent = parse_sections(renamed, Attribution.first_look(9, renamed))
    when = datetime(2026, 11, 20, 12, 3, 40, tzinfo=timezone.utc)
    for parent_text, answered in ((question, True), (replied, False)):  # the reply there before: someone typed it
        texts = {6: parent_text, 7: replied}
        mark_answered(silent, BOT, lambda: [OwnEdit(7, when, "/* Q */ reply", 6, texts.get)])
        assert silent[0].answered is answered
    elsewhere = "Header\n\n== Other ==\nWhy? " + sign("Ben") + "\n:Done. " + sign(BOT, 3) + "\n"
    mark_answered(silent, BOT, lambda: [OwnEdit(7, when, "/* Other */ reply", 6, {6: "Header\n", 7: elsewhere}.get)])
    assert not silent[0].answered


def test_the_request_is_the_heading_and_the_question_without_signature_residue():
    page = ("== Films by Kubrick, 1984/85 ==\nWhich films did he direct? --[[User:Bernd|Bernd]] "
            "([[User talk:Bernd|Diskussion]]) 12:00, 20 November 2026 (UTC)\n")
    request = extract_request(parse_sections(page)[0])
    assert request.question == "Films by Kubrick, 1984/85\n\nWhich films did he direct?"
    heading_only = "== Paintings by Vermeer, as in the title ==\n" + sign("Ann") + "\n"
    assert extract_request(parse_sections(heading_only)[0]).question == "Paintings by Vermeer, as in the title"


def test_the_request_holds_the_askers_queries_and_entities():
    vermeer, _, slow = parse_sections(FORUM)
    request = extract_request(vermeer)
    assert request.question.startswith("Paintings by Vermeer with their collection\n\nI would like a list of all "
                                       "paintings by Johannes Vermeer (Q41264)")
    assert "09:12" not in request.question and "Ewa" not in request.question
    assert request.entities == ["Q41264", "P195"]
    assert request.queries == []  # the query in the thread is Helper's, not the asker's
    assert "Thank you! — Ewa" in request.thread
    slow_request = extract_request(slow)
    assert slow_request.queries == ["SELECT ?article WHERE {\n  ?article wdt:P31 wd:Q13442814 .\n}",
                                    "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"]
    assert "SELECT" not in slow_request.question
    assert slow_request.to_context().draft_queries == slow_request.queries


def test_a_question_over_the_cap_is_not_parsed():
    huge = "== Long ==\n" + "word\n" * (MAX_REQUEST_CHARS // 5 + 10) + sign("Ann") + "\n"
    section = parse_sections(huge)[0]
    assert len(section.opening) > MAX_REQUEST_CHARS
    try:
        extract_request(section)
    except ValueError as error:
        assert "longer than 20000 characters" in str(error)
    else:
        raise AssertionError("a question over the cap was parsed")


def test_a_human_reply_with_a_query_is_seen():
    vermeer, basel, _ = parse_sections(FORUM)
    assert answered_by_human(vermeer, BOT)
    assert not answered_by_human(basel, BOT)


def test_a_follow_up_by_the_asker_under_the_bots_reply_is_identified_by_its_revision():
    question = "Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n"
    replied = question + ":Here it is:\n:{{SPARQL|query=SELECT ?film WHERE { ?film wdt:P57 wd:Q2001 } }}\n:" \
                         + sign(BOT, 1) + "\n"
    followed = replied + "::Thanks, can you also add the year? " + sign("Ann", 2) + "\n"
    attribution = history(("Admin", "Header\n"), ("Ann", question), (BOT, replied), ("Ann", followed))
    section = sections_of(attribution)[0]
    followup = pending_followup(section, BOT)
    assert (followup.revision, followup.user, followup.depth) == (4, "Ann", 3)
    request = extract_followup(section, followup, "SELECT ?film WHERE { ?film wdt:P57 wd:Q2001 }")
    assert request.question == "Films\n\nThanks, can you also add the year?"
    assert request.previous_query == "SELECT ?film WHERE { ?film wdt:P57 wd:Q2001 }"
    assert request.queries == []  # the bot's own query is the draft to revise, not the asker's
    assert request.to_context().previous_query == request.previous_query
    # the thread is the people's words before the follow-up; the bot's reply one line, its query given apart
    assert request.thread == "Films by Kubrick? — Ann\n(your earlier answer)"
    asked = extract_request(parse_sections(question)[0])
    assert asked.thread == "" and asked.question == "Films\n\nFilms by Kubrick?"  # given once, as the question
    key = followup_key(section.key, 4)
    assert not find_section(sections_of(attribution), key).answered
    answered = attribution.advance(5, BOT, followed + ":::The year is added. " + sign(BOT, 3) + "\n")
    assert find_section(sections_of(answered), key).answered
    assert pending_followup(sections_of(answered)[0], BOT) is None


def test_only_the_asker_or_someone_pinging_the_bot_makes_a_follow_up():
    question = "Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n"
    replied = question + ":A reply. " + sign(BOT, 1) + "\n"
    chat = replied + "::Nice question. " + sign("Bob", 2) + "\n"
    base = history(("Admin", "Header\n"), ("Ann", question), (BOT, replied))
    assert pending_followup(sections_of(base.advance(4, "Bob", chat))[0], BOT) is None
    ping = replied + "::{{ping|SpinachBot}} and the composers? " + sign("Bob", 2) + "\n"
    assert pending_followup(sections_of(base.advance(4, "Bob", ping))[0], BOT).user == "Bob"
    own = replied + "::A note by the bot itself. " + sign(BOT, 2) + "\n"
    assert pending_followup(sections_of(base.advance(4, BOT, own))[0], BOT) is None


def test_a_ping_in_a_section_counts_only_when_the_history_says_who_wrote_it():
    old = "Header\n\n== Old ==\nOld question {{ping|SpinachBot}} " + sign("Ann") + "\n"
    assert ping_in(sections_of(Attribution.first_look(1, old))[0], BOT) is None
    pinged = old + ":[[User:SpinachBot|SpinachBot]], can you help? " + sign("Bob", 4) + "\n"
    comment = ping_in(sections_of(Attribution.first_look(1, old).advance(2, "Bob", pinged))[0], BOT)
    assert comment is not None and comment.user == "Bob" and comment.owner == 2
    assert mentions("{{re|Someone|SpinachBot}}", BOT) and not mentions("<nowiki>{{ping|SpinachBot}}</nowiki>", BOT)


def test_attribution_carries_lines_and_round_trips():
    attribution = history(("Admin", "a\nb\nc"), ("Ann", "a\nx\nb\nc"), ("Bob", "a\nx\nb\nc\nd"))
    assert attribution.owners == [UNKNOWN, 2, UNKNOWN, UNKNOWN, 3]
    restored = Attribution.from_json(attribution.to_json(), attribution.text)
    assert (restored.owners, restored.users) == (attribution.owners, {2: "Ann", 3: "Bob"})


def summary_of(heading_line: str) -> str:
    return edit_summary(summary_section(parse_sections(heading_line + "\nQ? " + sign("Ann") + "\n")[0]), "question",
                        "query")


def test_the_edit_summary_links_the_section_and_keeps_slashes():
    assert summary_of("== Football season 1984/85 ==").startswith("/* Football season 1984/85 */ ")
    assert summary_of("== A */ trick ==").startswith("/* A * / trick */")


def test_the_edit_summary_claims_a_query_only_when_the_reply_posts_one():
    assert edit_summary("Q", "question", "query").endswith(
        "reply with a SPARQL query written by an automated agent (please check it)")
    assert edit_summary("Q", "follow-up", "query").startswith("/* Q */ follow-up: a revised SPARQL query")
    for kind, holds in (("question", "no_query"), ("question", "cannot_answer"), ("follow-up", "no_query"),
                        ("follow-up", "cannot_answer"), ("too-long", "no_query")):
        summary = edit_summary("Q", kind, holds)
        assert "query written" not in summary and summary.startswith("/* Q */ ") and "automated reply" in summary
    assert edit_summary("Q", "question", "cannot_answer").endswith("this cannot be answered from Wikidata")


def test_a_reply_goes_after_the_sections_last_line_and_nothing_else_changes():
    sections = parse_sections(FORUM)
    new = insert_reply(FORUM, sections[0], ":Reply ~~~~")
    assert new.replace("\n:Reply ~~~~", "", 1) == FORUM
    moved = parse_sections(new)[0]
    assert moved.text.rstrip().endswith(":Reply ~~~~")
    assert str(mwparserfromhell.parse(new)) == new
    last = insert_reply(FORUM, sections[-1], ":Last")
    assert last == FORUM.rstrip() + "\n:Last" + FORUM[len(FORUM.rstrip()):]


def test_close_matches_for_a_mistyped_heading():
    assert close_matches(parse_sections(FORUM), "Query timed out") == ["Query times out"]


def test_pathological_pages_parse_to_what_a_reader_sees():
    # Timing lives in scripts/bench_forum.py; here, that these pages give the right answer at all.
    lines = parse_sections("== Long ==\n" + "a\n" * 60_000 + sign("Ann") + "\n")[0]
    assert lines.author == "Ann" and len(lines.opening) > MAX_REQUEST_CHARS
    stamps = "== Stamps ==\n[[User:Ann|Ann]] " + "12:00, 20 November 2026 (UTC) " * 16_000 + "\n"
    assert [signature.user for signature in parse_sections(stamps)[0].signatures] == ["Ann"]
    unclosed = "== Tags ==\n" + "<nowiki>x <pre>y " * 20_000 + sign("Ann") + "\n== Next ==\n"
    assert [section.heading for section in parse_sections(unclosed)] == ["Tags", "Next"]


def test_the_page_lead_ends_at_the_first_heading_wherever_it_stands():
    assert page_lead(FORUM) == FORUM[:FORUM.index("== Paintings")]
    hidden = "{{bots|deny=SpinachBot}}\n<!--\n== Not a heading ==\n-->\n<div>\n== Real ==\n"
    assert page_lead(hidden) == "{{bots|deny=SpinachBot}}\n<!--\n== Not a heading ==\n-->\n<div>\n"


def test_a_ping_in_an_unanswered_section_carries_the_sections_question():
    old = "Header\n\n== Old ==\nWhich paintings did Vermeer make? " + sign("Ann") + "\n"
    pinged = old + ":{{ping|SpinachBot}} can you help here? " + sign("Bob", 4) + "\n"
    section = sections_of(Attribution.first_look(1, old).advance(2, "Bob", pinged))[0]
    comment = ping_in(section, BOT)
    followup = FollowUp(comment.owner, comment.user, comment.start, comment.end, 2)
    request = extract_followup(section, followup, None)
    assert request.question == "Old\n\nWhich paintings did Vermeer make?\n\ncan you help here?"


def test_a_humans_text_put_back_by_a_bot_revision_is_not_a_reply():
    question = "Header\n\n== Q ==\nWhat? " + sign("Ann") + "\n"
    displaced = "Header\n"
    restored = history(("Admin", "Header\n"), ("Ann", question), (BOT, displaced), (BOT, question))
    assert not sections_of(restored)[0].answered


def test_a_reply_never_lands_inside_an_element_someone_left_open_below_the_question():
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    hidden = '<div style="display:none">\n== Hidden note ==\nfor admins only. ' + sign("Mallory", 5) + "\n</div>\n"
    page = question + hidden + "== Later ==\nx " + sign("Bob") + "\n"
    alice, note, _ = parse_sections(page)
    assert insert_reply(page, alice, ":Reply").startswith(question + ":Reply\n<div")
    # The hidden section's own reply may not go after the </div> of an element opened above it: it stays
    # inside, where MediaWiki's check of the edit sees it hidden and refuses it.
    assert "only. " + sign("Mallory", 5) + "\n:Reply\n</div>" in insert_reply(page, note, ":Reply")
    closed = question + '<span style="color:red">note</span>\n<div class="box">\nboxed text\n</div>\n:Me too. ' \
        + sign("Bob", 7) + "\n"
    assert insert_reply(closed, parse_sections(closed)[0], ":Reply") == closed.rstrip() + "\n:Reply\n"
    table = question + "{|\n| a table someone left open\n"
    assert insert_reply(table, parse_sections(table)[0], ":Reply") == \
        question + ":Reply\n{|\n| a table someone left open\n"
    # A template call over several lines: a reply inside it would be one of its arguments (after a "|" of
    # its own, a hidden one).
    call = question + "{{#if:1|\n== Shown by a function ==\n}}\nA note. " + sign("Carol", 8) + "\n"
    assert insert_reply(call, parse_sections(call)[0], ":Reply") == question + ":Reply\n" + call[len(question):]


@pytest.mark.parametrize("tag", ["ref", "poem", "gallery", "references", "score", "math", "chem", "timeline",
                                 "templatedata", "indicator name=\"x\"", "REF", "pre", "syntaxhighlight"])
def test_a_reply_never_lands_inside_an_extension_tag_opened_below_the_question(tag):
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    name = tag.split()[0]
    footnote = f":Me too.<{tag}>\n== A heading in it ==\nA line in it.\n</{name}> " + sign("Bob", 5) + "\n"
    page = question + footnote + "== Later ==\nx " + sign("Carol") + "\n"
    assert insert_reply(page, parse_sections(page)[0], ":Reply") == question + footnote + ":Reply\n" \
        + page[len(question + footnote):]


def test_a_reply_keeps_out_of_every_extension_tag_the_wiki_has():
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    tabs = ":Me too.<tabber>\nFirst tab\n</tabber> " + sign("Bob", 5) + "\n"
    page = question + tabs
    reading = Reading(find_headings(page), extension_tags=frozenset({"tabber"}) | INERT_TAGS)
    assert insert_reply(page, parse_sections(page, reading=reading)[0], ":Reply") == page + ":Reply\n"


def test_a_heading_shaped_line_inside_a_code_block_or_comment_does_not_split_a_comment():
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    for block in ("<pre>\n== Fake pre ==\n</pre>", '<syntaxhighlight lang="sparql">\n== Fake ==\n</syntaxhighlight>',
                  "<!--\n== Fake ==\n-->"):
        comment = ":Me too.\n" + block + "\n:The rest of my comment. " + sign("Bob", 5) + "\n"
        page = question + comment
        assert insert_reply(page, parse_sections(page)[0], ":Reply") == page + ":Reply\n", block


def test_a_reply_never_lands_below_a_heading_the_page_shows_inside_the_section():
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    for shown in ("<!-- -->== Not a section ==", "<h2>An HTML heading</h2>", "== Heading ==<noinclude/>",
                  "{{Archived note}}"):
        page = question + shown + "\n:Under it. " + sign("Bob") + "\n"
        reading = Reading([find_headings(page)[0]], frozenset({"Archived note"}))
        section = parse_sections(page, reading=reading)[0]
        assert insert_reply(page, section, ":Reply") == question + ":Reply\n" + page[len(question):], shown
    subsection = question + "=== Details ===\nMore. " + sign("Alice", 3) + "\n"
    assert insert_reply(subsection, parse_sections(subsection)[0], ":Reply") == subsection.rstrip() + "\n:Reply\n"


def test_a_follow_up_is_answered_below_it():
    question = "Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n"
    replied = question + ":A reply. " + sign(BOT, 1) + "\n"
    followed = replied + "::And the years? " + sign("Ann", 2) + "\n<div>\nAnn's note, left open\n"
    sections = sections_of(history(("Admin", "Header\n"), ("Ann", question), (BOT, replied), ("Ann", followed)))
    section = find_section(sections, followup_key(sections[0].key, 4))
    assert insert_reply(followed, section, ":::Reply") == followed.replace(
        "2026 (UTC)\n<div>", "2026 (UTC)\n:::Reply\n<div>")


def test_a_reply_may_also_go_right_after_the_question_never_inside_what_a_stranger_saved_below_it():
    question = "== Alice ==\nWho advised Euler? " + sign("Alice") + "\n"
    gallery = "<gallery>\nFile:X.png|== A caption ==\n</gallery>\n:Same here. " + sign("Bob", 5) + "\n"
    page = question + gallery + "<div>\n:Open. " + sign("Carol", 6) + "\n"
    section = parse_sections(page)[0]
    end_of_thread = len(question + gallery) - 1
    assert reply_points(page, section) == [end_of_thread, len(question) - 1]
    assert insert_reply(page, section, ":Reply", len(question) - 1) == question + ":Reply\n" + gallery \
        + page[len(question + gallery):]
    with pytest.raises(ValueError):  # inside the gallery: no place for a reply
        insert_reply(page, section, ":Reply", len(question) + len("<gallery>"))
    opened = "== Alice ==\n<div>Who advised Euler? " + sign("Alice") + "\nMore.</div>\n" + gallery
    assert reply_points(opened, parse_sections(opened)[0]) == [len(opened) - 1, opened.index("</div>") + 6]
    alone = question + ":A reply. " + sign("Bob", 5) + "\n"
    assert reply_points(alone, parse_sections(alone)[0]) == [len(alone) - 1, len(question) - 1]
    signed_last = question.rstrip("\n")
    assert reply_points(signed_last, parse_sections(signed_last)[0]) == [len(signed_last)]


def test_a_comment_older_than_the_bots_reply_is_no_follow_up_though_below_it():
    question = "Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n"
    again = question + ":Anyone? " + sign("Ann", 1) + "\n"
    replied = again.replace(":Anyone?", ":A reply. " + sign(BOT, 2) + "\n:Anyone?")
    base = history(("Admin", "Header\n"), ("Ann", question), ("Ann", again), (BOT, replied))
    assert pending_followup(sections_of(base)[0], BOT) is None
    followed = replied + "::And the years? " + sign("Ann", 3) + "\n"
    assert pending_followup(sections_of(base.advance(5, "Ann", followed))[0], BOT).revision == 5


def test_a_reply_goes_above_what_was_saved_in_its_thread_while_it_was_written():
    question = ("Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n\n== Other ==\nHello "
                + sign("Eve") + "\n")
    read = history(("Admin", "Header\n"), ("Ann", question))
    followup = "::Also the years? " + sign("Ann", 2)
    saved = question.replace(sign("Ann") + "\n", sign("Ann") + "\n" + followup + "\n")
    section = locate_after_change(read, saved, sections_of(read)[0].key, BOT)
    meanwhile = saved_meanwhile(saved, section)
    assert meanwhile.read_end == saved.index(followup) - 1 and meanwhile.signed_followup(section, BOT)
    assert reply_points(saved, section) == [saved.index(followup) - 1]
    assert insert_reply(saved, section, ":Reply") == saved.replace("\n" + followup, "\n:Reply\n" + followup)
    # a stranger's unsigned line, and lines saved in another section, are no follow-up and move nothing else
    unsigned = saved.replace(followup, ":Me too, no signature").replace("Hello ", "Hello again ")
    section = locate_after_change(read, unsigned, sections_of(read)[0].key, BOT)
    assert not saved_meanwhile(unsigned, section).signed_followup(section, BOT)
    assert reply_points(unsigned, section) == [unsigned.index(":Me too") - 1]
    # nothing saved in the thread: the end of the thread, as before
    elsewhere = question.replace("Hello ", "Hello again ")
    section = locate_after_change(read, elsewhere, sections_of(read)[0].key, BOT)
    assert saved_meanwhile(elsewhere, section) is None
    assert reply_points(elsewhere, section) == [elsewhere.index("\n\n== Other")]


def test_a_follow_up_saved_while_the_reply_was_written_is_answered_though_older_than_the_reply():
    question = "Header\n\n== Films ==\nFilms by Kubrick? " + sign("Ann") + "\n"
    followed = question + "::Also the years? " + sign("Ann", 2) + "\n"
    replied = followed.replace("::Also", ":A reply. " + sign(BOT, 3) + "\n::Also")
    # revision 2: the question the bot read; 3: the follow-up saved while it wrote; 4: its reply, above it
    base = history(("Admin", "Header\n"), ("Ann", question), ("Ann", followed), (BOT, replied))
    section = sections_of(base)[0]
    assert pending_followup(section, BOT, read=2).revision == 3
    assert pending_followup(section, BOT, read=3) is None  # it stood there when the answer was written
    assert pending_followup(section, BOT) is None  # not known what the answer read: older than the reply is none
    chat = replied.replace("::Also the years? " + sign("Ann", 2), "::Nice question. " + sign("Bob", 2))
    bob = history(("Admin", "Header\n"), ("Ann", question), ("Bob", chat.replace(":A reply. " + sign(BOT, 3) + "\n",
                                                                               "")), (BOT, chat))
    assert pending_followup(sections_of(bob)[0], BOT, read=2) is None


def test_a_reply_is_never_indented_deeper_than_max_depth():
    question = "Header\n\n== Q ==\nWhat? " + sign("Ann") + "\n"
    replied = question + ":A reply. " + sign(BOT, 1) + "\n"
    deep = replied + ":" * 2000 + "And? " + sign("Ann", 2) + "\n"
    section = sections_of(history(("Admin", "Header\n"), ("Ann", question), (BOT, replied), ("Ann", deep)))[0]
    assert pending_followup(section, BOT).depth == MAX_DEPTH


def test_lines_that_come_back_keep_their_owner():
    lead = "Header\n\n"
    asked = lead + "== Q ==\nWhat? " + sign("Ann") + "\n"
    answered = asked + ":Here it is. " + sign(BOT, 1) + "\n"
    other = answered + "\n== R ==\nAnother question? " + sign("Bob", 2) + "\n"
    base = history(("Admin", lead), ("Ann", asked), (BOT, answered), ("Bob", other))
    before = {section.heading: (section.key, section.answered) for section in sections_of(base)}
    blanked = base.advance(5, "Vandal", "")
    reverted = blanked.advance(6, "Admin", other)
    undone = base.advance(5, "Vandal", other.replace("What?", "Nonsense.")).advance(6, "Admin", other)
    moved = base.advance(5, "Mover", lead + other[len(answered) + 1:] + "\n" + answered[len(lead):])
    archived = base.advance(5, "Archiver", lead + other[len(answered) + 1:]).advance(6, "Admin", other)
    for name, attribution in (("reverted", reverted), ("undone", undone), ("moved", moved),
                              ("un-archived", archived)):
        after = {section.heading: (section.key, section.answered) for section in sections_of(attribution)}
        assert after == before, name
    # A heading alone coming back (a new question under an old heading) is new text, not the old section.
    again = base.advance(5, "Archiver", lead).advance(6, "Cleo", lead + "== Q ==\nA new question. "
                                                                  + sign("Cleo", 9) + "\n")
    [section] = sections_of(again)
    assert section.key != before["Q"][0] and not section.answered and section.author == "Cleo"
    restored = Attribution.from_json(reverted.to_json(), reverted.text)
    assert restored.removed == reverted.removed and restored.owners == reverted.owners


def test_a_section_has_the_same_fingerprint_wherever_it_comes_back():
    question = "== Q ==\nWhat? " + sign("Ann") + "\n"
    first = parse_sections("Lead\n" + question)[0]
    moved = parse_sections("Lead\n== Other ==\nx\n" + question + ":A reply\n")[1]
    assert first.fingerprint == moved.fingerprint
    assert parse_sections("Lead\n" + question.replace("Ann", "Bob"))[0].fingerprint != first.fingerprint


def test_hostile_text_is_read_whole_and_gives_back_what_a_reader_sees():
    # Timing lives in scripts/bench_forum.py; here, that the bounded reading loses nothing a reader sees.
    for hostile in ("{{a|" * 10_000, "<div a=" * 5_000, "[http://a " * 5_000, "<b>" * 10_000, "{|\n" * 10_000):
        assert plain_text("Before " + hostile + " after") == " ".join(("Before " + hostile + " after").split())
    page = "== Q ==\nWhich {{Q|Q42}} works? {{SPARQL|query=SELECT ?x WHERE { ?x wdt:P50 wd:Q42 } }} " \
        + "{{a|" * 4_000 + " " + sign("Ann") + "\n"
    request = extract_request(parse_sections(page)[0])
    assert request.entities == ["Q42"] and request.queries == ["SELECT ?x WHERE { ?x wdt:P50 wd:Q42 }"]


def test_heading_offsets_counted_in_bytes_or_in_code_points_each_find_every_heading_once():
    """MediaWiki 1.39 counts a section's ``byteoffset`` in code points, later versions in UTF-8 bytes. Here the
    byte offset of the first heading is the code-point offset of the second: read one offset at a time, the
    second heading would be found twice and the first not at all."""
    text = "é" * 9 + "\n== B ==\n\n== C ==\nx\n"
    heads = [text.index("== B"), text.index("== C")]
    in_bytes = [len(text[:start].encode("utf-8")) for start in heads]
    assert in_bytes[0] == heads[1]  # the collision
    assert heading_starts(text, in_bytes) == heads
    assert heading_starts(text, heads) == heads
    assert heading_starts(text, [*in_bytes, 3]) == [*heads, None]  # an offset at no heading start: left out


def test_a_question_merged_as_a_subsection_is_found_there_and_a_renamed_one_is_not():
    older = "Header\n\n== Older ==\nWho advised Gauss? " + sign("Ann") + "\n"
    asked = "\n== Euler ==\nWho advised Euler?\nAnd whom did they advise? " + sign("Bob", 3) + "\n"
    base = history(("Admin", "Header\n"), ("Ann", older), ("Bob", older + asked))
    key = parse_sections(base.text, base)[1].key
    question = parse_sections(base.text, base)[1].question
    merged = older + "\n=== Students of Euler ===\n" + asked.split("\n", 2)[2].replace("Who advised Euler?",
                                                                                         "Who advised Euler??")
    after = base.advance(4, "Cid", merged)
    found = locate_after_change(base, merged, key, BOT, question=question)  # the question's lines, by history
    assert found is not None and found.key == key and found.heading == "Students of Euler"
    assert found.author == "Bob" and found.within.heading == "Older"
    assert found.start == merged.index("=== Students") and found.end == len(merged)
    assert locate_after_change(after, merged, key, BOT) is None  # without its question: gone, as before
    # Renamed, not merged: the section still asks it, and a subheading in it written with it is no merged copy.
    renamed = older + asked.replace("== Euler ==", "== Euler's advisors ==").replace(
        "And whom", "=== Details ===\nAnd whom")
    assert locate_after_change(base, renamed, key, BOT, question=question) is None
    # Below the bot's reply in the older thread, by that thread's asker, the merged question reads as a follow-up of
    # the thread; where its record claims it, it is none.
    replied = older + ":Gauss's. " + sign(BOT, 4) + "\n"
    again = history(("Admin", "Header\n"), ("Ann", older), (BOT, replied),
                    ("Ann", replied + asked.replace("Bob", "Ann")))
    key, question = parse_sections(again.text, again)[1].key, parse_sections(again.text, again)[1].question
    merged = again.text.replace("\n== Euler ==", "\n=== Euler ===")
    thread = sections_of(again.advance(5, "Cid", merged))[0]
    assert pending_followup(thread, BOT) is not None
    view = locate_after_change(again, merged, key, BOT, question=question)
    assert view is not None and pending_followup(thread, BOT, claimed=[(view.start, view.end)]) is None


@pytest.mark.parametrize("words, phrase", [
    ("Never mind, I found it myself: SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }", "never mind"),
    ("Solved, thanks", "solved"),
    ("Erledigt, danke! Ich habe es selbst gefunden.", "erledigt"),
    ("J'ai trouvé, merci", "trouvé"),
    ("Ya lo encontré, gracias", "lo encontré"),
    ("Нашёл сам, спасибо", "нашёл"),
    ("Решено", "решено"),
    ("Not solved yet", None),
    ("Noch nicht gefunden", None),
    ("Je n'ai pas trouvé", None),
    ("I haven't found it", None),
    ("Found it, but what about the years?", None),  # a follow-up that asks anew
    ("¿Y los años? Lo encontré", None),
    ("This is unsolved", None),
    ("Found it" + " x" * 5000, "found it"),
    (" x" * 5000 + " found it", None),  # only the start of a long comment is read
])
def test_an_askers_words_say_the_question_is_settled_only_without_a_new_question(words, phrase):
    assert says_settled(words) == phrase
