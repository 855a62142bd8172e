"""The review step on a real MediaWiki: drafts on the review page, posted to the forum only once a reviewer
approves them, as an operator runs the bot (``python -m bot.run``, in this process).

Who marked a draft is read from the review page's history: every human edit here is Alice's, so a mark she
signs as Bob is still hers.
"""

from __future__ import annotations

import html
import re

import pytest

from tests.support.bot_rig import BotRig
from tests.support.euler import EULER_ADVISORS_QUERY
from tests.support.forum_text import new_section, section_text, signature
from tests.support.reviewing import Reviewing, ask, draft_heading_line

pytestmark = pytest.mark.mediawiki


def drafted(rig: BotRig, forum: str, name: str, *headings: str) -> Reviewing:
    """The bot reviewing *forum*, after its first look, with a draft written for each question *headings* asks."""
    review = Reviewing(rig, forum, name)
    review.run()
    ask(rig.mediawiki, forum, *(headings or ("Euler",)))
    review.run()
    return review


def test_a_draft_is_posted_when_a_reviewer_approves_it_and_dropped_when_one_rejects_it(
        mediawiki, forum, rig, request):
    review = Reviewing(rig, forum, request.node.name)
    review.run()  # the first look: backlog
    ask(mediawiki, forum, "Euler", "Euler again")
    log = review.run()
    assert rig.bot_edits(forum) == [] and "drafted for review" in log
    assert review.drafts() == {"Euler": ("drafted", None), "Euler again": ("drafted", None)}
    assert review.sections()["Euler"] == review.sections()["Euler again"] == "drafted"
    first = review.draft(1)
    assert f"[[{forum}#Euler|Euler]]" in first and "[[User:SpinachBot|SpinachBot]]" in first  # linked, signed
    assert ":The query lists Euler's doctoral advisors (P184). The query below finds 1 result." in first
    assert "~~~~" not in first
    assert "{{re|" not in first  # the review page notifies no asker

    review.mark(1, "{{approved}}")
    review.mark(2, "{{Rejected}}")
    log = review.run()
    [edit] = rig.bot_edits(forum)
    assert edit["comment"].startswith("/* Euler */ reply with a SPARQL query written by an automated agent")
    posted = section_text(mediawiki.page_text(forum), "Euler")
    assert ":{{re|1=Alice}} The query lists Euler's" in posted  # the asker is addressed as it is posted
    assert posted.count("[[User:SpinachBot|SpinachBot]]") == 1
    assert "run by [[User talk:Alice|Alice]]" in posted
    assert "[[User:SpinachBot" not in section_text(mediawiki.page_text(forum), "Euler again")
    assert review.drafts()["Euler"][0] == "posted" and review.drafts()["Euler again"][0] == "rejected"
    assert review.sections()["Euler"] == "answered" and review.sections()["Euler again"] == "rejected"
    assert 'answered "Euler"' in log and 'rejected by a reviewer "Euler again"' in log

    review.run()  # nothing is drafted or posted again
    assert len(rig.bot_edits(forum)) == 1 and "== Draft 3:" not in review.text()


def test_the_edited_draft_is_posted_and_still_checked_by_mediawiki(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again")
    review.edit_draft(1, lambda text: text.replace(":The query lists",
                                                   ":Checked by the operator. The query lists"))
    review.mark(1, "{{approved}}")
    review.edit_draft(2, lambda text: text.replace(":The query lists", ":[[Category:Spam]] The query lists"))
    review.mark(2, "{{approved}}")
    log = review.run()
    assert len(rig.bot_edits(forum)) == 2, log[-3000:]
    text = mediawiki.page_text(forum)
    assert ":{{re|1=Alice}} Checked by the operator. The query lists" in section_text(text, "Euler")
    # The reviewer's category is words, as the bot renders every reply: shown, never a category of the forum.
    assert "[[Category:Spam]]" not in text and "Category:Spam" in section_text(text, "Euler again")
    assert "Category:Spam" not in mediawiki.categories(forum)
    assert review.drafts()["Euler again"][0] == "posted" and "shows as text" in review.draft(2)


def test_an_approval_by_someone_not_on_the_list_is_ignored(mediawiki, forum, rig, request):
    review = Reviewing(rig, forum, request.node.name, reviewers="Bob")
    review.run()
    ask(mediawiki, forum, "Euler")
    review.run()
    review.mark(1, "{{approved}}", user="Bob")  # signed as Bob, saved by Alice
    log = review.run()
    assert rig.bot_edits(forum) == []
    # A draft's section is the bot's and its reviewers': Alice's line there is undone, her mark counted for nothing.
    assert review.drafts()["Euler"][0] == "drafted" and "Alice changed its section" in log
    assert "{{approved}}" not in review.draft(1) and "'''Restored'''" in review.draft(1)
    review.run()
    assert rig.bot_edits(forum) == [] and review.draft(1).count("'''Restored'''") == 1  # undone once
    review.configure("Alice, Bob")  # now Alice may approve: her mark counts
    review.mark(1, "{{approved}}")
    review.run()
    assert len(rig.bot_edits(forum)) == 1 and review.drafts()["Euler"][0] == "posted"


def test_a_stale_draft_is_checked_again_and_dropped_with_its_reason(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again")
    page = mediawiki.page_text(forum)
    answer = f":Try {{{{SPARQL|query={EULER_ADVISORS_QUERY}}}}} {signature('Bob', 40)}\n"
    head, tail = page.split("\n\n== Euler again ==")
    mediawiki.edit_as_human(forum, head + "\n" + answer + "\n== Euler again ==" + tail + "\n:Also their years? "
                            + signature(minute=45), "a human answer, and a question changed")
    review.mark(1, "{{approved}}")
    review.mark(2, "{{approved}}")
    review.run()
    assert rig.bot_edits(forum) == []
    drafts = review.drafts()
    assert drafts["Euler"] == ("dropped", "stale: someone posted a query there meanwhile")
    assert drafts["Euler again"] == ("dropped", "stale: the thread changed since the draft")
    assert "'''Dropped''': someone posted a query there meanwhile" in review.draft(1)
    assert "drafted anew" in review.draft(2)
    review.run()  # the changed question is drafted anew, with its thread as it is now, shown to the reviewers
    assert "== Draft 3:" in review.text() and review.drafts()["Euler again"] == ("drafted", None)
    news = review.draft(3).split("<!-- draft 3 answers", 1)[0]
    assert "The thread changed since draft 2" in news and "Also their years?" in news
    assert "Try" not in news  # the other section's new comment is not this thread's


def test_a_section_marked_resolved_is_not_drafted_and_its_waiting_draft_is_dropped(mediawiki, forum, rig, request):
    review = Reviewing(rig, forum, request.node.name)
    review.run()
    ask(mediawiki, forum, "Euler")
    page = mediawiki.page_text(forum)
    mediawiki.edit_as_human(forum, page + new_section("Settled", "Who advised Euler? {{Section resolved|1=Alice}}",
                                                      minute=9), "a question settled at once")
    review.run()
    assert "Settled" not in review.text() and review.sections()["Settled"] == "skipped"
    page = mediawiki.page_text(forum)
    mediawiki.edit_as_human(forum, page.replace("\n\n== Settled ==", "\n:Found it myself, thanks. {{Section resolved|"
                                                f"1=Alice}}}} {signature(minute=20)}\n\n== Settled ==", 1),
                            "the asker found the answer")
    review.mark(1, "{{approved}}")
    review.run()
    review.run()
    assert rig.bot_edits(forum) == [] and "== Draft 2:" not in review.text()
    # the asker said so in words too: the draft is dropped at once, with their reason, approved or not
    assert review.drafts()["Euler"] == ("dropped", 'the asker said the question is settled ("found it")')
    assert review.sections()["Euler"] == "skipped"


# --- what a reviewer approved is what is posted ---------------------------------------------------------------

#: Someone who is not a reviewer: an unregistered editor, known by the address the wiki saw.
STRANGER = "127.0.0.1"
OVERLAY = '<div style="position:fixed;top:0;left:0;width:100%;height:100%;z-index:99;background:#fff">Gone</div>'


def edit_as_stranger(mediawiki, title: str, text: str, summary: str = "an edit") -> None:
    """Save *text* without logging in, as anyone may."""
    import json
    import urllib.request
    from urllib.parse import urlencode

    data = urlencode({"action": "edit", "title": title, "text": text, "summary": summary, "token": "+\\",
                      "format": "json"}).encode()
    with urllib.request.urlopen(urllib.request.Request(mediawiki.api_url, data=data), timeout=60) as response:
        done = json.load(response)
    assert done.get("edit", {}).get("result") == "Success", done


def change_draft(review: Reviewing, number: int, change, editor) -> None:
    """*editor* (a function of title, text, summary) saves the review page with draft *number*'s section changed."""
    text = review.text()
    heading = draft_heading_line(text, number)
    head, rest = text.split(heading + "\n", 1)
    section, _, tail = rest.partition("\n== ")
    editor(review.page, head + heading + "\n" + change(section) + (("\n== " + tail) if tail else ""),
           "an edit")


def inside_draft(line: str):
    """An edit that adds *line* inside the draft, above its query."""
    return lambda section: section.replace("\n:{{SPARQL", f"\n{line}\n:{{{{SPARQL", 1)


@pytest.mark.parametrize("when", ["after the approval", "before the approval"])
def test_a_change_to_the_draft_by_someone_not_a_reviewer_is_undone_and_never_posted(
        mediawiki, forum, rig, request, when):
    review = drafted(rig, forum, request.node.name, "Euler")
    inserted = ":INSERTED: run [https://query.wikidata.org/#DELETE%20WHERE this query] to check."

    def stranger(title, text, summary):
        edit_as_stranger(mediawiki, title, text, summary)

    if when == "after the approval":
        review.mark(1, "{{approved}}")
        change_draft(review, 1, inside_draft(inserted), stranger)
    else:
        change_draft(review, 1, inside_draft(inserted), stranger)
        review.mark(1, "{{approved}}")  # given while the stranger's line stood: it counts for nothing
    log = review.run()
    assert "INSERTED" not in mediawiki.page_text(forum) and "INSERTED" not in review.text(), log[-3000:]
    [restore] = [edit for edit in rig.bot_edits(review.page) if "restored" in edit["comment"]]
    assert STRANGER in restore["comment"]
    assert "'''Restored'''" in review.draft(1) and STRANGER in review.draft(1)
    if when == "before the approval":
        assert rig.bot_edits(forum) == [] and review.drafts()["Euler"][0] == "drafted"
        review.mark(1, "{{approved}}")  # the reviewer approves the draft as it stands again
        review.run()
    [edit] = rig.bot_edits(forum)
    assert "INSERTED" not in mediawiki.page_text(forum) and review.drafts()["Euler"][0] == "posted"
    assert "'''Posted'''" in review.draft(1) and f"[[Special:Diff/{edit['revid']}|" in review.draft(1)
    assert "== Draft 2:" not in review.text()  # the question kept its draft: nothing drafted anew


def test_the_draft_is_posted_as_it_stood_when_the_reviewer_approved_it(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler")
    review.edit_draft(1, inside_draft(":Checked by the operator."))
    review.mark(1, "{{approved}}")
    review.edit_draft(1, inside_draft(":Added by the reviewer after approving."))
    review.run()
    posted = section_text(mediawiki.page_text(forum), "Euler")
    assert ":Checked by the operator." in posted and "after approving" not in posted
    assert review.drafts()["Euler"][0] == "posted"


def test_markup_that_shows_only_on_the_forum_is_posted_as_text_and_a_strangers_is_undone(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again")
    hidden = ":{{#ifeq:{{NAMESPACE}}|User||" + OVERLAY + "}}"
    change_draft(review, 1, inside_draft(hidden), lambda *edit: edit_as_stranger(mediawiki, *edit))
    review.edit_draft(2, inside_draft(hidden))  # a reviewer who did not see it either
    review.mark(1, "{{approved}}")
    review.mark(2, "{{approved}}")
    review.run()  # both approvals were given while the stranger's line stood above draft 2: undone, not counted
    assert rig.bot_edits(forum) == [] and "{{#ifeq" not in review.draft(1)
    review.mark(2, "{{approved}}")
    review.run()
    assert "Gone</div>" not in mediawiki.rendered_html(forum) and "position:fixed" in mediawiki.rendered_html(forum)
    assert "{{#ifeq" not in mediawiki.page_text(forum)  # the reviewer's markup, as text: escaped
    assert review.drafts()["Euler"][0] == "drafted" and "{{#ifeq" not in review.draft(1)  # the stranger's: undone
    assert review.drafts()["Euler again"][0] == "posted" and "shows as text" in review.draft(2)


def test_a_copied_section_or_a_moved_mark_approves_nothing(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again")
    review.mark(1, "{{approved}}")
    # The reviewer's approval of draft 1 moved under draft 2: it is the mover's mark there.
    text = review.text()
    mark = text[text.index(":{{approved}}"):].split("\n", 1)[0]
    moved = text.replace(mark + "\n", "", 1) if mark + "\n" in text else text.replace(mark, "", 1)
    edit_as_stranger(mediawiki, review.page, moved.rstrip("\n") + "\n" + mark + "\n")
    # A copy of draft 1's section, with other words, above the real one.
    text = review.text()
    copy = review.heading(1) + "\n" + review.draft(1).replace(":Here is a query", ":COPIED Here is a query") + "\n"
    edit_as_stranger(mediawiki, review.page, text.replace(review.heading(1), copy + review.heading(1), 1))
    review.run()
    assert "COPIED" not in mediawiki.page_text(forum)
    drafts = review.drafts()
    # Draft 1 was approved by its reviewer before the stranger moved the mark: the stranger's copy above it is
    # another section, and the mark the stranger moved lost draft 1's section the approval it was given there.
    assert drafts["Euler"][0] in ("drafted", "posted") and "COPIED" not in review.draft(1)
    assert drafts["Euler again"][0] == "drafted"
    assert "[[User:SpinachBot" not in section_text(mediawiki.page_text(forum), "Euler again")


def test_with_the_state_lost_waiting_drafts_are_taken_up_numbers_never_reused_and_approvals_post_once(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again", "Euler third")
    review.mark(3, "{{rejected}}")
    review.run()
    rig.state_path().unlink()  # the recovery the bot advises for a damaged state file
    review.mark(1, "{{approved}}")  # given while the bot has no state
    log = review.run()
    text = mediawiki.page_text(forum)
    assert section_text(text, "Euler").count("[[User:SpinachBot|SpinachBot]]") == 1, log[-3000:]
    assert "[[User:SpinachBot" not in section_text(text, "Euler again") + section_text(text, "Euler third")
    assert "== Draft 4:" not in review.text()  # nothing drafted twice
    assert review.drafts() == {"Euler": ("posted", None), "Euler again": ("drafted", None),
                               "Euler third": ("rejected", None)}
    ask(mediawiki, forum, "Euler four")
    review.run()
    assert review.text().count("== Draft 1:") == 1 and "Euler four" in review.draft(4)
    review.mark(2, "{{approved}}")
    review.run()
    text = mediawiki.page_text(forum)
    assert [section_text(text, heading).count("[[User:SpinachBot|SpinachBot]]")
            for heading in ("Euler", "Euler again", "Euler third", "Euler four")] == [1, 1, 0, 0]
    assert len(rig.bot_edits(forum)) == 2


def test_a_dry_run_shows_the_draft_and_the_passes_count_what_became_of_it_by_name(forum, rig, request):
    review = Reviewing(rig, forum, request.node.name)
    review.run()
    ask(rig.mediawiki, forum, "Euler")
    preview = rig.run(forum, "--once", "--dry-run", "--config", str(rig.directory / "bot.ini"))
    assert preview.code == 0, preview.stderr[-3000:]
    assert "--- draft of the reply to 'Euler' (dry run: nothing was saved) ---" in preview.stdout
    assert review.drafts() == {}
    assert re.search(r"pass over [^\n]*: [^\n]*previewed 1", preview.stderr)
    assert re.search(r"done: \{[^\n]*'previewed': 1", preview.stderr), preview.stderr[-3000:]
    log = review.run()
    assert review.drafts() == {"Euler": ("drafted", None)}
    assert re.search(r"done: \{[^\n]*'drafted': 1", log), log[-3000:]


@pytest.mark.parametrize("who", ["a stranger", "a reviewer"])
def test_a_removed_marker_silences_nothing_unless_a_reviewer_removed_it(mediawiki, forum, rig, request, who):
    review = drafted(rig, forum, request.node.name, "Euler")
    editor = (lambda *edit: edit_as_stranger(mediawiki, *edit)) if who == "a stranger" else \
        (lambda *edit: mediawiki.edit_as_human(*edit))
    change_draft(review, 1, lambda section: section.replace("<!-- draft 1 ends -->", ""), editor)
    review.run()
    status, reason = review.drafts()["Euler"]
    if who == "a stranger":  # undone: the draft waits, whole again
        assert status == "drafted" and "<!-- draft 1 ends -->" in review.draft(1)
        review.mark(1, "{{approved}}")
        review.run()
        assert review.drafts()["Euler"][0] == "posted" and "== Draft 2:" not in review.text()
    else:
        assert status == "dropped" and "end marker" in reason and review.sections()["Euler"] == "skipped"
        assert rig.bot_edits(forum) == []


#: Elements that hide what they hold, in any style: none is read, since whose they are decides.
HIDING_WRAPPERS = [('<div style="display:none">', "</div>"), ('<font style="display:none">', "</font>"),
                   ('<div style="display:var(--h,none)">', "</div>"),
                   ('<div style="content-visibility:hidden">', "</div>"), ('<div style="zoom:0.01">', "</div>"),
                   ('<div style="color:#fff">', "</div>"),
                   ('<div style="opacity:0.3">' * 3, "</div>" * 3),
                   ('<div style="-webkit-transform:scale(0)">', "</div>"),
                   ('<span class="mw-collapsible-content" hidden>', "</span>")]


@pytest.mark.parametrize("wrapper", HIDING_WRAPPERS, ids=[opening[:40] for opening, _ in HIDING_WRAPPERS])
def test_a_draft_hidden_by_a_stranger_in_its_section_is_restored_and_the_approval_given_then_counts_for_nothing(
        mediawiki, forum, rig, request, wrapper):
    review = drafted(rig, forum, request.node.name, "Euler")
    opening, closing = wrapper
    change_draft(review, 1, lambda section: section.replace(
        "<!-- draft 1 begins", f":Douglas Adams is alive.\n{opening}\n<!-- draft 1 begins", 1).replace(
        "<!-- draft 1 ends -->", f"<!-- draft 1 ends -->\n{closing}", 1),
        lambda *edit: edit_as_stranger(mediawiki, *edit))
    review.mark(1, "{{approved}}")  # what the reviewer saw was the fake line
    review.run()
    assert rig.bot_edits(forum) == [] and "Douglas Adams is alive" not in review.text()
    assert review.drafts()["Euler"][0] == "drafted" and "'''Restored'''" in review.draft(1)
    review.mark(1, "{{approved}}")  # the real draft, now in view
    review.run()
    assert review.drafts()["Euler"][0] == "posted" and "Douglas Adams is alive" not in mediawiki.page_text(forum)


@pytest.mark.parametrize("wrapper", HIDING_WRAPPERS[:3], ids=[opening[:40] for opening, _ in HIDING_WRAPPERS[:3]])
@pytest.mark.parametrize("where", ["below another draft", "in the page's lead"])
def test_an_element_a_stranger_left_open_above_a_draft_is_undone_and_the_draft_posts_once_approved_again(
        mediawiki, forum, rig, request, wrapper, where):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again")
    text = review.text()
    if where == "below another draft":  # draft 1's own section is restored as well
        text = text.replace("<!-- draft 1 ends -->", f"<!-- draft 1 ends -->\nLooks fine.\n{wrapper[0]}", 1)
    else:
        text = f"Drafts to review.\n{wrapper[0]}\n" + text
    edit_as_stranger(mediawiki, review.page, text)
    review.mark(2, "{{approved}}")  # what the reviewer saw was not draft 2
    log = review.run()
    assert rig.bot_edits(forum) == [] and wrapper[0] not in review.text(), log[-3000:]
    # Undone once, said under the first draft below it (the oldest waiting draft is looked at first).
    assert review.drafts()["Euler again"][0] == "drafted" and review.text().count("'''Restored'''") == 1
    review.mark(2, "{{approved}}")
    review.run()
    assert review.drafts()["Euler again"][0] == "posted" and "== Draft 3:" not in review.text()


def test_an_element_open_above_a_draft_before_it_was_written_gets_it_refused_until_a_reviewer_closes_it(
        mediawiki, forum, rig, request):
    review = Reviewing(rig, forum, request.node.name)
    edit_as_stranger(mediawiki, review.page, 'Drafts to review.\n<div style="display:var(--h,none)">\n')
    review.run()
    ask(mediawiki, forum, "Euler")
    review.run()
    review.mark(1, "{{approved}}")
    review.run()
    status, reason = review.drafts()["Euler"]
    assert status == "refused" and "opened above it" in reason and rig.bot_edits(forum) == []
    review.run()  # drafted anew; a reviewer closes the element, and the new draft posts once approved
    mediawiki.edit_as_human(review.page, review.text().replace('<div style="display:var(--h,none)">', "", 1), "fix")
    review.mark(2, "{{approved}}")
    review.run()
    assert review.drafts()["Euler"][0] == "posted"


def test_a_reviewer_may_rename_a_drafts_section_while_approving_it(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler")
    text = review.text().replace(review.heading(1), "== Draft 1 (checked) ==", 1)
    mediawiki.edit_as_human(review.page, text.rstrip() + f"\n:{{{{approved}}}} {signature('Alice', 50)}\n", "ok")
    log = review.run()
    assert review.drafts()["Euler"][0] == "posted", log[-3000:]
    assert "[[User:SpinachBot" in section_text(mediawiki.page_text(forum), "Euler")
    renamed = review.text().split("== Draft 1 (checked) ==\n", 1)[1]
    assert "'''Posted'''" in renamed  # the outcome is written where the section is now


def test_with_the_state_lost_a_renamed_forum_section_keeps_its_approved_draft(mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler")
    rig.state_path().unlink()
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum).replace("== Euler ==", "== Euler's advisors ==", 1),
                            "a clearer heading")
    review.mark(1, "{{approved}}")
    log = review.run()
    text = mediawiki.page_text(forum)
    assert section_text(text, "Euler's advisors").count("[[User:SpinachBot|SpinachBot]]") == 1, log[-3000:]
    assert "== Draft 2:" not in review.text()


def test_a_strip_marker_planted_on_the_review_page_silences_no_draft(mediawiki, forum, rig, request):
    """The review page's own text holds no extension tag whose strip marker a look-alike could take."""
    review = Reviewing(rig, forum, request.node.name)
    markers = "".join(f'<span style="display:none">\x7f\'"`UNIQ--nowiki-{number:08X}-QINU`"\'\x7f</span>'
                      for number in range(6))
    mediawiki.edit_as_human(review.page, f"Drafts to review. {markers} {signature('Mallory', 1)}\n", "planted")
    review.run()
    ask(mediawiki, forum, "Euler")
    review.run()
    assert "== Draft 1:" in review.text(), review.drafts()
    review.mark(1, "{{approved}}")
    review.run()
    assert review.drafts()["Euler"][0] == "posted"


@pytest.mark.parametrize("change", [
    lambda section: section.replace("\n:{{SPARQL", "\n== Looks good ==\n:{{SPARQL", 1),  # splits the section
    lambda section: section.replace("<!-- draft 1 begins", "<!-- draft 1 begins!", 1),  # its marker, changed
    lambda section: section.split("\n", 1)[0] + "\n",  # everything but the heading, gone
], ids=["a heading inside", "the marker changed", "the section emptied"])
def test_a_strangers_change_to_a_drafts_structure_is_undone_and_the_draft_still_posts(
        mediawiki, forum, rig, request, change):
    review = drafted(rig, forum, request.node.name, "Euler")
    change_draft(review, 1, change, lambda *edit: edit_as_stranger(mediawiki, *edit))
    log = review.run()
    assert "'''Restored'''" in review.text() and review.drafts()["Euler"][0] == "drafted", log[-3000:]
    review.mark(1, "{{approved}}")
    review.run()
    assert review.drafts()["Euler"][0] == "posted"
    posted = section_text(mediawiki.page_text(forum), "Euler")
    assert "Looks good" not in posted and posted.count("{{SPARQL|") == 1


def test_an_approved_draft_goes_in_its_plain_form_where_the_forums_q_template_now_brings_in_a_page_per_item(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name)
    assert "{{Q|Q124500}}" in review.draft(1)
    mediawiki.edit_as_human("Q124500", "Johann Bernoulli, a Swiss mathematician.", "an item's page")
    mediawiki.edit_as_human("Template:Q", "{{:{{{1}}}}}", "a {{Q}} that shows the item's page")
    try:
        for page in (forum, review.page):  # as the wiki's job queue does after a template changes
            mediawiki.human().call(post=True, action="purge", titles=page)
        review.mark(1, "{{approved}}")
        log = review.run()
        assert len(rig.bot_edits(forum)) == 1, log[-3000:]
        posted = section_text(mediawiki.page_text(forum), "Euler")
        assert "{{" not in posted and ":[[User:Alice|Alice]]: The query lists Euler's" in posted
        assert "[[Q124500]]" in posted and '<div class="mw-code">SELECT ?advisor WHERE' in posted
        assert "Template:Q brings in Q124500 (a page per item)" in log
        assert review.drafts()["Euler"][0] == "posted" and review.sections()["Euler"] == "answered"
        assert "in its plain form (items as links" in review.draft(1)
    finally:
        mediawiki.edit_as_human("Template:Q", "{{{1}}}", "entity template")
        mediawiki.edit_as_human("Q124500", "", "blanked")


# --- an asker who found the answer themselves -----------------------------------------------------------------

def answer_in_thread(mediawiki, forum: str, comments: dict[str, str]) -> None:
    """Alice writes *comments* (by the heading of her question, asked by :func:`ask`) below her questions."""
    page = mediawiki.page_text(forum)
    for minute, (heading, comment) in enumerate(comments.items()):
        question = f"== {heading} ==\nWho advised Euler? {signature(minute=minute)}\n"
        assert question in page + "\n", heading
        page = (page + "\n").replace(question, question + f":{comment} {signature(minute=30 + minute)}\n", 1)
    mediawiki.edit_as_human(forum, page, "the asker answers in the threads")


SETTLED = {"Euler": ("Never mind, I found it myself: SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor }",
                     'the asker said the question is settled ("never mind")'),
           "Euler de": ("Erledigt, danke! Ich habe es selbst gefunden.",
                        'the asker said the question is settled ("erledigt")'),
           "Euler query": (f"This works: {{{{SPARQL|query={EULER_ADVISORS_QUERY}}}}}",
                           "the asker posted a query in the thread")}


def test_an_asker_who_found_the_answer_has_the_waiting_draft_dropped_and_never_drafted_again(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, *SETTLED, "Euler more")
    assert [status for status, _ in review.drafts().values()] == ["drafted"] * 4
    answer_in_thread(mediawiki, forum, {**{heading: said for heading, (said, _) in SETTLED.items()},
                                        "Euler more": "Thanks. And who were their own advisors?"})
    review.mark(4, "{{approved}}")  # approved as the thread changed: dropped, and drafted anew
    log = review.run()
    for run in range(2):
        log += review.run()
    assert rig.bot_edits(forum) == []
    drafts = review.drafts()
    for number, (heading, (_, reason)) in enumerate(SETTLED.items(), 1):
        assert drafts[heading] == ("dropped", reason)
        assert review.sections()[heading] == "skipped"
        assert f"'''Dropped''': {reason}; nothing was posted" in review.draft(number), review.draft(number)
        assert f"draft {number} for {heading!r} dropped: {reason}" in log
    # the follow-up that asks something new is drafted anew, once; nothing else is drafted again
    assert drafts["Euler more"] == ("drafted", None)
    assert "== Draft 5" in review.text() and "== Draft 6" not in review.text()
    assert "And who were their own advisors?" in review.draft(5)


# --- the review page reads like a status board ---------------------------------------------------------------

#: Forum headings a stranger may write, as MediaWiki and the bot read them: heading-shaped, markup-bearing.
HOSTILE_HEADINGS = ("Euler = two == three", "Euler &#61;&#61; Fake &#61;&#61;",
                    "Euler &lt;/div&gt;&lt;div style=display:none&gt; [[Category:Spam]] "
                    "&#123;&#123;Q&#124;Q1&#125;&#125; __NOTOC__ ''x''")


def contents(mediawiki, title: str) -> list[str]:
    """The review page's table of contents as MediaWiki reads it: each section's line as a reader sees it."""
    sections = mediawiki.api(action="parse", page=title, prop="sections")["parse"]["sections"]
    return [html.unescape(re.sub(r"<[^>]*>", "", section["line"])) for section in sections]


def test_the_review_pages_contents_say_each_drafts_status_and_a_renamed_heading_is_the_reviewers(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name, "Euler", "Euler again", "Euler three", "Euler four",
                     *HOSTILE_HEADINGS)
    review.run()  # five drafts a pass
    assert contents(mediawiki, review.page) == [
        "Draft 1: Euler (waiting)", "Draft 2: Euler again (waiting)", "Draft 3: Euler three (waiting)",
        "Draft 4: Euler four (waiting)", "Draft 5: Euler = two == three (waiting)",
        "Draft 6: Euler == Fake == (waiting)",
        "Draft 7: Euler </div><div style=display:none> Category:Spam {{Q|Q1}} __NOTOC__ x (waiting)"]
    review.mark(1, "{{approved}}")
    review.mark(2, "{{rejected}}")
    page = mediawiki.page_text(forum)
    three = "== Euler three ==\nWho advised Euler? " + signature(minute=2) + "\n"
    mediawiki.edit_as_human(forum, page.replace(three, three + ":And their years? " + signature(minute=40) + "\n"),
                            "a question changed")
    review.mark(3, "{{approved}}")
    review.mark(4, "{{approved}}")
    mediawiki.edit_as_human(review.page, review.text().replace(review.heading(4), "== Checked by Alice ==", 1),
                            "renamed by its reviewer")
    review.run()
    review.run()
    assert len(rig.bot_edits(forum)) == 2
    board = contents(mediawiki, review.page)
    assert board[:4] == ["Draft 1: Euler (posted)", "Draft 2: Euler again (rejected)",
                         "Draft 3: Euler three (dropped)", "Checked by Alice"]
    assert all(line.startswith(f"Draft {number}: Euler") and line.endswith(" (waiting)")
               for number, line in enumerate(board[4:7], 5))  # hostile headings: one section each, still waiting
    assert board[7:] == ["Draft 8: Euler three (waiting)"]  # drafted anew
    renamed = review.text().split("== Checked by Alice ==\n", 1)[1].split("\n== ", 1)[0]
    assert "'''Posted'''" in renamed  # the renamed draft is posted under its reviewer's heading
    for number in (1, 2, 3):  # a closed draft says "waiting" nowhere
        assert "waiting" not in review.heading(number) + review.draft(number)
    assert "waiting" not in renamed
    assert "Category:Spam" not in " ".join(mediawiki.categories(review.page))
    rendered = mediawiki.rendered_html(review.page)
    # the forum heading's markup shows as text: no hidden block, and __NOTOC__ keeps no table of contents away
    assert not re.search(r"<div[^>]*display:\s*none", rendered) and 'id="toc"' in rendered


def test_a_question_merged_into_another_thread_while_its_draft_waits_is_posted_under_it_once(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name)
    asked = section_text(mediawiki.page_text(forum), "Euler")
    page = mediawiki.page_text(forum).replace("\n\n== Euler ==\n" + asked, "")
    assert "== Euler ==" not in page
    start = page.index("== Paintings by Vermeer with their collection ==")
    end = page.index("\n== ", start + 1)
    merged = page[:end].rstrip("\n") + "\n\n=== Euler ===\n" + asked.rstrip("\n") + "\n" + page[end:]
    mediawiki.edit_as_human(forum, merged, "merge the Euler thread into an older one")
    review.mark(1, "{{approved}}")  # approved after the merge: the question is found where it went
    log = review.run()
    [reply] = rig.bot_edits(forum)
    text = mediawiki.page_text(forum)
    subsection = text.split("\n=== Euler ===\n", 1)[1].split("\n== ", 1)[0]
    assert text.count("[[User:SpinachBot|SpinachBot]]") == 1 and "[[User:SpinachBot|SpinachBot]]" in subsection
    assert subsection.index("Who advised Euler?") < subsection.index("The query lists Euler's"), log[-3000:]
    assert review.drafts()["Euler"][0] == "posted" and review.sections()["Euler"] == "answered"
    for _ in range(2):
        review.run()
    assert len(rig.bot_edits(forum)) == 1 and "== Draft 2" not in review.text()  # answered once


def test_a_draft_whose_question_left_the_page_is_dropped_and_drafted_anew_if_it_comes_back(
        mediawiki, forum, rig, request):
    review = drafted(rig, forum, request.node.name)
    asked = mediawiki.page_text(forum)
    mediawiki.edit_as_human(forum, asked.split("\n\n== Euler ==\n", 1)[0] + "\n", "moved elsewhere")
    review.mark(1, "{{approved}}")
    review.run()
    assert rig.bot_edits(forum) == [] and review.drafts()["Euler"][0] == "dropped"
    assert "the section is no longer on the page; nothing was posted, and the question will be drafted anew if it " \
           "comes back" in review.draft(1)
    mediawiki.edit_as_human(forum, asked, "moved back")
    review.run()
    assert "== Draft 2: Euler (waiting) ==" in review.text()


def test_an_approval_below_a_line_that_only_looks_like_a_heading_counts_and_one_below_a_real_heading_does_not():
    from bot.review import Origin, draft_section, read_draft

    origin = Origin("Wikidata:Request a query", "Euler", "f", "question", "d", "summary")
    section = draft_section(3, "Wikidata:Request a query", "Euler", "Here is a query. ~~~~", origin)
    approved = f"Before: {{{{approved}}}} {signature('Rita')}"
    # Lines MediaWiki reads as no heading: an arrow, an unclosed one, one in a template call or a comment.
    page = (f"Intro.\n\n{section}\n==> I checked the query\n== not closed\n{{{{note|\n== in a call ==\n}}}}\n"
            f"<!--\n== in a comment ==\n-->\n{approved}\n")
    assert read_draft(page, 3).marks["approved"] == 1

    page = f"Intro.\n\n{section}\n== Another thread ==\n{approved}\n"
    assert read_draft(page, 3).marks["approved"] == 0
