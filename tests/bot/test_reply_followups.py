"""Follow-ups through the one bot rig on the real MediaWiki, in English, German and French.

The model reading a follow-up gets the thread as the people in it wrote it
and the bot's previous final query, never the bot's reply flattened into
words; every first message holds the question once.  A German follow-up
that asks for no query is answered in German with the model's explanation.
"""

from __future__ import annotations

import pytest

from tests.support.bot_rig import BotRig
from tests.support.forum_text import new_section
from tests.support.llm_server import ErrorReply, TextReply, ToolCallReply
from tests.bot.test_reply_in_browser import FINAL, QUESTIONS, plan

pytestmark = pytest.mark.mediawiki
FOLLOW_UPS = {"en": "Thanks! Can you add where each river flows into?",
              "de": "Danke! Kannst du noch ergänzen, wohin jeder Fluss mündet?",
              "fr": "Merci ! Pouvez-vous ajouter où se jette chaque fleuve ?"}
REVISED = FINAL.replace("?basin_km2 WHERE {", "?basin_km2 ?mouth WHERE {\n  OPTIONAL { ?river wdt:P403 ?mouth . }")


def follow_up(text: str, user: str = "Alice") -> str:
    return f"\n::{text} [[User:{user}|{user}]] ([[User talk:{user}|talk]]) 13:30, 20 November 2026 (UTC)\n"


def asked_and_answered(mediawiki, rig: BotRig, forum: str, language: str) -> None:
    heading, question, _ = QUESTIONS[language]
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(heading, question))
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]


def user_message(body: dict) -> str:
    return next(message["content"] for message in body["messages"] if message["role"] == "user")


def revision(language: str):
    """A model that runs the revised query and stops."""
    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        if not any(message["role"] == "tool" for message in body["messages"]):
            return ToolCallReply("execute_sparql", {"thought": "Add the mouth (P403).", "sparql": REVISED})
        return ToolCallReply("stop", {"thought": "Done.", "language": language,
                                      "explanation": "P403 gives the mouth of each river."})
    return reply


@pytest.mark.parametrize("language", ["en", "de", "fr"])
def test_a_follow_up_gives_the_model_the_askers_words_and_the_previous_query_not_the_bots_reply(
        mediawiki, llm_server, world, tmp_path, language):
    heading, question, explanation = QUESTIONS[language]
    forum = mediawiki.fresh_forum(f"follow-up {language}")
    first = llm_server(plan(language))
    rig = BotRig(mediawiki, tmp_path, first, world)
    asked_and_answered(mediawiki, rig, forum, language)
    asked = user_message(first.requests[0])
    assert asked.count(question) == 1, asked  # the question once, not again as "the discussion so far"

    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + follow_up(FOLLOW_UPS[language]))
    second = llm_server(revision(language))
    done = rig.run(forum, "--once", "--live", llm=second)
    assert done.code == 0 and len(rig.bot_edits(forum)) == 2, done.stderr[-3000:]
    prompt = user_message(second.requests[0])
    assert prompt.count(FOLLOW_UPS[language]) == 1 and prompt.count(question) == 1, prompt
    assert prompt.count(FINAL) == 1  # the previous final query, given as the draft to revise
    assert "(your earlier answer)" in prompt
    for reply_words in (explanation[:40], "Steps", "automated agent", "{{re", "Q1653"):
        assert reply_words not in prompt, (reply_words, prompt)

    page = mediawiki.page_text(forum)
    reply = page.split(FOLLOW_UPS[language], 1)[1].split("\n", 1)[1]
    assert reply.startswith(":::{{re|1=Alice}} P403 gives the mouth of each river. ")
    assert rig.bot_edits(forum)[0]["comment"].startswith(f"/* {heading} */ follow-up: a revised SPARQL query")


def test_a_german_follow_up_without_a_query_is_answered_in_german_with_the_models_explanation(
        mediawiki, llm_server, world, tmp_path):
    explanation = "P2053 ist die Fläche des Einzugsgebiets eines Flusses, in Quadratkilometern."
    forum = mediawiki.fresh_forum("follow-up without a query")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan("de")), world)
    asked_and_answered(mediawiki, rig, forum, "de")
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + follow_up("Danke! Was bedeutet P2053 genau?"))

    def explains(body):
        if "tools" not in body:  # the end of the run asks for a final query: there is none to give
            return TextReply('{"sparql": "", "explanation": "", "language": ""}')
        return ToolCallReply("stop", {"thought": "Eine Erklärung genügt hier.", "language": "de",
                                      "explanation": explanation})

    done = rig.run(forum, "--once", "--live", llm=llm_server(explains))
    assert done.code == 0 and len(rig.bot_edits(forum)) == 2, done.stderr[-3000:]
    reply = mediawiki.page_text(forum).split("Was bedeutet P2053 genau?", 1)[1].split("\n", 1)[1]
    assert reply.startswith(":::{{re|1=Alice}} Ich konnte keine Abfrage finden"), reply
    assert explanation in reply and "Vorgehen (" in reply
    for english in ("I could not", "Steps taken", "Written by", "more", "rolled back", "query"):
        assert english not in reply.replace("{{re|1=Alice}}", ""), (english, reply)
    assert rig.bot_edits(forum)[0]["comment"].endswith("follow-up: automated reply, no query found")
