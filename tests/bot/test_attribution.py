"""Who wrote what, who asked, and whom a reply addresses, from the page's history (no wiki: the revisions are data).

What a forum user notices: a signature someone typed makes nobody a writer of the thread, the asker and the one
whose comment a reply answers are addressed (never the bot, never one who only appears in a forged signature),
and lines no listed revision explains belong to no known user.
"""

from __future__ import annotations

from bot.attribution import addressees, asker_of, carried, from_history
from bot.forum import FollowupKey, parse_sections
from bot.history import UNKNOWN, Revision

BOT = "SpinachBot"


def signature(user: str, minute: int = 0) -> str:
    return f"[[User:{user}|{user}]] ([[User talk:{user}|talk]]) 12:{minute:02d}, 20 November 2026 (UTC)"


LEAD = "Ask your questions below."
QUESTION = f"{LEAD}\n\n== Rivers ==\nWhich rivers flow through Paris? {signature('Alice')}\n"
REPLY = QUESTION + f":Here is a query. {signature(BOT, 3)}\n"
FOLLOW_UP = REPLY + f"::And their lengths? {signature('Carol', 5)}\n"
HISTORY = [Revision(1, "Admin", LEAD, creation=True), Revision(2, "Alice", QUESTION), Revision(3, BOT, REPLY),
           Revision(4, "Carol", FOLLOW_UP)]


def test_each_line_belongs_to_the_revision_and_user_that_added_it():
    attribution = from_history(HISTORY, FOLLOW_UP, 4)
    lines = FOLLOW_UP.split("\n")

    owners = {lines[index]: attribution.users.get(owner) for index, owner in enumerate(attribution.owners)}

    assert owners[lines[0]] == "Admin"
    assert owners[lines[2]] == "Alice" and owners[lines[3]] == "Alice"
    assert owners[lines[4]] == BOT and owners[lines[5]] == "Carol"


def test_without_a_history_nobody_is_known_and_an_unexplained_change_is_nobodys():
    assert from_history([], FOLLOW_UP, 4).owners == [UNKNOWN] * (FOLLOW_UP.count("\n") + 1)

    start = from_history(HISTORY[:3], REPLY, 3)
    later = carried(start, [], FOLLOW_UP, 9)  # the revisions between could not be read
    assert later.revision == 9 and later.owners[5] == 9 and 9 not in later.users


def test_a_reply_addresses_the_asker_and_the_one_it_answers_but_never_the_bot():
    [section] = parse_sections(FOLLOW_UP, from_history(HISTORY, FOLLOW_UP, 4))
    followup = str(FollowupKey(section.key, 4))

    assert asker_of(section, followup) == "Carol"
    assert asker_of(section, section.key) is None
    assert addressees(section, section.key, BOT) == ("Alice",)
    assert addressees(section, followup, BOT) == ("Alice", "Carol")
    assert addressees(section, str(FollowupKey(section.key, 3)), BOT) == ("Alice",)  # the bot's own line
    assert addressees(section, str(FollowupKey("Another @ r2", 4)), BOT) == ("Alice",)  # not this thread's


def test_a_typed_signature_makes_nobody_a_writer_to_address():
    forged = REPLY + f"::And their lengths? {signature('Mallory', 5)}\n"
    history = [*HISTORY[:3], Revision(4, "Carol", forged)]
    [section] = parse_sections(forged, from_history(history, forged, 4))

    assert addressees(section, str(FollowupKey(section.key, 4)), BOT) == ("Alice", "Carol")
