"""Reading the forum page: sections, signatures, identity, what the asker gave, where a reply goes."""

from pathlib import Path

import mwparserfromhell

from bot.forum import (
    close_matches, extract_request, find_section, insert_reply, page_opted_out, parse_sections,
)

FORUM = (Path(__file__).parent / "fixtures" / "forum" / "request_a_query.wiki").read_text()


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


def test_who_replied_and_who_opted_out():
    vermeer, basel, slow = parse_sections(FORUM)
    assert vermeer.replied_by("Helper") and vermeer.replied_by("helper")
    assert not slow.replied_by("SpinachBot")
    assert basel.opted_out("SpinachBot") and not slow.opted_out("SpinachBot")
    assert not page_opted_out(FORUM, "SpinachBot")
    assert page_opted_out("{{bots|deny=SpinachBot}}\n" + FORUM, "SpinachBot")
    assert page_opted_out("{{bots|allow=OtherBot}}\n" + FORUM, "SpinachBot")
    assert not page_opted_out("{{bots|allow=SpinachBot,OtherBot}}\n" + FORUM, "SpinachBot")


def test_the_request_holds_the_question_queries_and_entities():
    vermeer, _, slow = parse_sections(FORUM)
    request = extract_request(vermeer)
    assert request.question.startswith("I would like a list of all paintings by Johannes Vermeer")
    assert "09:12" not in request.question
    assert request.entities == ["Q41264", "P195"]
    assert request.queries == [
        "SELECT ?painting ?collection WHERE { ?painting wdt:P170 wd:Q41264 | wdt:P195 ?collection . }"]
    assert "Thank you!" in request.thread
    slow_request = extract_request(slow)
    assert slow_request.queries == ["SELECT ?article WHERE {\n  ?article wdt:P31 wd:Q13442814 .\n}",
                                    "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"]
    assert "SELECT" not in slow_request.question
    context = slow_request.to_context()
    assert context.draft_queries == slow_request.queries


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
