"""The bot with an example store (``examples_path``), on the real MediaWiki, run as an operator runs it.

What a forum user notices: the model is shown solved requests like theirs, never their own thread's, also when
they ask in another language; a repost of an archived request gets one line linking the earlier thread; a merely
similar request does not.
"""

import pytest

from agent.examples import ExampleStore, SolvedExample
from tests.support.bot_rig import run_bot, user_messages
from tests.support.forum_text import new_section, section_text

pytestmark = pytest.mark.mediawiki
GAUSS = "SELECT ?advisor WHERE { wd:Q6722 wdt:P184 ?advisor . }"
MONA_LISA = "SELECT ?painter WHERE { wd:Q12418 wdt:P170 ?painter . }"
OTHERS = ["Which rivers flow through the city of Paris?", "Who is the mayor of the city of Berlin?",
          "What is the population of the country of Chile?", "Who were the members of the band Queen?",
          "Who directed the film Metropolis?", "Which mountains are higher than the Mont Blanc?"]


def write_store(path, forum):
    archive = f"{forum}/Archive/2024/05"
    store = ExampleStore(path)
    store.add([SolvedExample(key="forum gauss", question="Doctoral advisors of Gauss Who were the doctoral advisors "
                             "of Carl Friedrich Gauss?", sparql=GAUSS, source="forum", date="2024-05-02",
                             heading="Doctoral advisors of Gauss", month="2024-05",
                             link=f"{archive}#Doctoral advisors of Gauss", author="Helper"),
               # The question's own thread, harvested from the forum page while it was still there.
               SolvedExample(key="forum own", question="Euler's advisors Who were the doctoral advisors of "
                             "Leonhard Euler? (own thread)", sparql="SELECT ?own WHERE { wd:Q7604 wdt:P184 ?own }",
                             source="forum", heading="Euler's advisors", month="2026-11",
                             link=f"{forum}#Euler's advisors")]
              + [SolvedExample(key=f"other {number}", question=question, source="qald9plus train",
                               sparql=f"SELECT ?x WHERE {{ ?x wdt:P{number + 17} ?y }}")
                 for number, question in enumerate(OTHERS)]
              + [SolvedExample(key="mona lisa", question="Who painted the Mona Lisa?", sparql=MONA_LISA,
                               source="qald9plus train")])
    store.add_property_names(store.unnamed_properties(), {"P184": ["doctoral advisor"]}, {"P184": "doctoral advisor"})
    store.close()


def test_the_model_sees_similar_requests_and_a_repost_links_the_earlier_thread(mediawiki, forum, rig):
    tmp_path = rig.directory
    write_store(tmp_path / "examples.sqlite", forum)
    mediawiki.edit_as_human(f"{forum}/Archive/2024/05", "== Doctoral advisors of Gauss ==\nWho were they?", "archive")
    (tmp_path / "bot.ini").write_text(f"[bot]\nexamples_path = {tmp_path / 'examples.sqlite'}\n")
    options = ("--once", "--live", "--config", str(tmp_path / "bot.ini"))
    run_bot(rig, forum, *options)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum)
                            + new_section("Euler's advisors", "Who were the doctoral advisors of Leonhard Euler?")
                            + new_section("Gauss", "Who were the doctoral advisors of Carl Friedrich Gauss?", minute=5)
                            + new_section("La Joconde", "Qui a peint la Joconde ?", minute=7))
    run_bot(rig, forum, *options)
    assert len(rig.bot_edits(forum)) == 3
    first_prompts = [user_messages(body) for body in rig.llm.requests
                     if sum(message["role"] == "tool" for message in body["messages"]) == 0]
    euler = next(prompt for prompt in first_prompts if "Leonhard Euler?" in prompt.split("\n")[2])
    shown = euler.split("Similar solved requests", 1)[1]
    assert "SELECT ?advisor WHERE{wd:Q6722 wdt:P184 ?advisor.}" in shown
    assert "own thread" not in shown and "?own" not in shown
    # Asked in French, with the painting's French name: not one word in common with the English example.
    french = next(prompt for prompt in first_prompts if "Joconde" in prompt.split("\n")[2])
    assert "SELECT ?painter WHERE{wd:Q12418 wdt:P170 ?painter.}" in french.split("Similar solved requests", 1)[1]
    page = mediawiki.page_text(forum)
    assert "An earlier request looks similar" not in section_text(page, "Euler's advisors")
    assert (f":An earlier request looks similar: [[{forum}/Archive/2024/05#Doctoral advisors of Gauss|Doctoral "
            "advisors of Gauss]] (2024-05-02). Helper answered it with a query using doctoral advisor (P184).") in \
        section_text(page, "Gauss")


def test_a_missing_store_is_a_clear_error_before_anything_is_read(rig, forum):
    tmp_path = rig.directory
    (tmp_path / "bot.ini").write_text(f"[bot]\nexamples_path = {tmp_path / 'missing.sqlite'}\n")
    done = rig.run(forum, "--once", "--config", str(tmp_path / "bot.ini"))
    assert done.code == 2
    assert f"no example store at {tmp_path / 'missing.sqlite'}: build one with spinach-examples build" in done.stderr


def test_a_store_without_examples_yet_costs_no_question_its_answer(mediawiki, forum, rig):
    """An operator's first store is often empty (``spinach-examples build`` before any harvest): the bot answers
    with no examples block."""
    tmp_path = rig.directory
    ExampleStore(tmp_path / "examples.sqlite").close()
    (tmp_path / "bot.ini").write_text(f"[bot]\nexamples_path = {tmp_path / 'examples.sqlite'}\n")
    options = ("--once", "--live", "--config", str(tmp_path / "bot.ini"))
    run_bot(rig, forum, *options)
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum)
                            + new_section("Euler's advisors", "Who were the doctoral advisors of Leonhard Euler?"))
    run_bot(rig, forum, *options)
    assert len(rig.bot_edits(forum)) == 1
    assert "wdt:P184" in section_text(mediawiki.page_text(forum), "Euler's advisors")
    prompts = [user_messages(body) for body in rig.llm.requests]
    assert prompts and not [prompt for prompt in prompts if "Similar solved requests" in prompt]
