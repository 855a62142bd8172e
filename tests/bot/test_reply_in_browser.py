"""The reply as a reader meets it, in English, German and French: words first, as tall as a regular's answer at
most twice, the asker told, a trace that tells the truth.

The bot answers on the real MediaWiki (``python -m bot.run`` through the one
rig) after a scripted model searches, runs an unfiltered draft (41 rows) and
a final query (6 rows), and stops with its explanation.  Headless Chromium at
1280 px renders the page: a regular's answer to the same question (a
sentence, ``{{SPARQL}}``, a signature) is the measure of the bot's height.
"""

from __future__ import annotations

import json

import pytest

from tests.support.bot_rig import BotRig
from tests.support.forum_text import new_section
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.mediawiki import BOT_USER

pytestmark = pytest.mark.mediawiki
WIDTH = 1280
DRAFT = "SELECT ?river ?length WHERE { ?river wdt:P31 wd:Q4022 ; wdt:P17 wd:Q183 ; wdt:P2043 ?length . }"
FINAL = """SELECT ?river ?riverLabel ?length ?basin_km2 WHERE {
  ?river wdt:P31 wd:Q4022 ;
         wdt:P17 wd:Q183 ;
         wdt:P2043 ?length .
  OPTIONAL { ?river wdt:P2053 ?basin_km2 . }
  FILTER(?length > 500)
  SERVICE wikibase:label { bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". }
}
ORDER BY DESC(?length)"""
#: The same answer on one line: the regular's answer is then as short as it gets.
ONE_LINE = ("SELECT ?river ?length ?basin_km2 WHERE { ?river wdt:P17 wd:Q183 ; wdt:P2043 ?length . "
            "OPTIONAL { ?river wdt:P2053 ?basin_km2 } FILTER(?length > 500) }")
QUESTIONS = {
    "en": ("Long rivers of Germany", "Which rivers in Germany are longer than 500 km, and how large are their basins?",
           "These are the rivers in Germany (P17 = Q183) longer than 500 km (P2043), with their drainage basin "
           "(P2053) where Wikidata has one."),
    "de": ("Lange Flüsse Deutschlands", "Welche Flüsse in Deutschland sind länger als 500 km, und wie groß sind "
           "ihre Einzugsgebiete?", "Das sind die Flüsse in Deutschland (P17 = Q183), die länger als 500 km sind "
           "(P2043), mit ihrem Einzugsgebiet (P2053), wo Wikidata eines kennt."),
    "fr": ("Longs fleuves d'Allemagne", "Quels fleuves d'Allemagne dépassent 500 km, et quelle est la taille de "
           "leur bassin ?", "Voici les cours d'eau d'Allemagne (P17 = Q183) de plus de 500 km (P2043), avec leur "
           "bassin versant (P2053) quand Wikidata le connaît."),
}


def plan(language: str, final: str = FINAL):
    """A model that searches, runs the draft, runs the *final* query and stops with its explanation."""
    explanation = QUESTIONS[language][2]
    steps = [("search_wikidata", {"thought": "Find the item for rivers first.", "query": "river"}),
             ("execute_sparql", {"thought": "List every river in Germany with its length, to see what is there.",
                                 "sparql": DRAFT}),
             ("execute_sparql", {"thought": "Keep the rivers longer than 500 km and add their basins.",
                                 "sparql": final})]

    def reply(body):
        if "tools" not in body:
            return ErrorReply(400, "no pruning expected")
        done = sum(message["role"] == "tool" for message in body["messages"])
        if done < len(steps):
            return ToolCallReply(*steps[done])
        return ToolCallReply("stop", {"thought": "The final query answers it.", "language": language,
                                      "explanation": explanation})

    return reply


def regular_answer(heading: str, question: str, query: str) -> str:
    """The same question answered as a regular does: a sentence, {{SPARQL}}, a signature."""
    return (new_section(heading, question, "Carol", 5)
            + ":Try this one, it lists the rivers with their length and basin:\n"
            + ":{{SPARQL|query=" + query + "\n}}\n"
            + ":[[User:Bob|Bob]] ([[User talk:Bob|talk]]) 13:00, 20 November 2026 (UTC)\n")


#: In the page: the height of the reply signed by *user* below the comment signed by *asker*: from the bottom
#: of the asker's comment to the bottom of the line holding the reply's signature.
HEIGHT = """((asker, user) => {
  const links = [...document.querySelectorAll('#mw-content-text a')];
  const block = (e) => { while (!['DD', 'LI', 'P'].includes(e.tagName)) e = e.parentElement; return e; };
  const signature = links.filter((a) => a.textContent === user).pop();
  const question = links.slice(0, links.indexOf(signature)).filter((a) => a.textContent === asker).pop();
  return block(signature).getBoundingClientRect().bottom - block(question).getBoundingClientRect().bottom;
})(%s, %s)"""


def open_page(browser, mediawiki, forum: str) -> None:
    browser.width(WIDTH)
    url = mediawiki.api_url.replace("/api.php", f"/index.php?title={forum.replace(' ', '_')}")
    browser.open(url, "window.mw && mw.loader.getState('jquery.makeCollapsible') === 'ready' && "
                      "document.querySelector('.mw-collapsible-toggle')")


@pytest.mark.parametrize(("language", "query"), [("en", FINAL), ("de", FINAL), ("fr", FINAL), ("en", ONE_LINE)],
                         ids=["en", "de", "fr", "en-one-line"])
def test_a_collapsed_reply_is_at_most_twice_as_tall_as_a_regulars_answer(mediawiki, llm_server, world, browser,
                                                                         tmp_path, language, query):
    heading, question, explanation = QUESTIONS[language]
    forum = mediawiki.fresh_forum(f"height {language} {len(query)}")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan(language, query)), world)
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(heading, question))
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + regular_answer(heading + " (2)", question, query))

    open_page(browser, mediawiki, forum)
    bot = browser.evaluate(HEIGHT % (json.dumps("Alice"), json.dumps(BOT_USER)))
    regular = browser.evaluate(HEIGHT % (json.dumps("Carol"), json.dumps("Bob")))
    print(f"{language}, a query of {query.count(chr(10)) + 1} lines: bot {bot:.0f} px, regular {regular:.0f} px")
    assert bot <= 2 * regular, (bot, regular)


#: In the page: where, on screen, the column *header* of the trace's table starts and where *value* in the row
#: below it starts.
COLUMN = """((line, header, value) => {
  const content = [...document.querySelectorAll('.mw-collapsible-content')].pop();
  const walker = document.createTreeWalker(content, NodeFilter.SHOW_TEXT), nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  const at = nodes.findIndex((node) => node.textContent.includes(line));
  const row = nodes.slice(at + 1).find((node) => node.textContent.includes(value));
  const left = (node, offset) => { const range = document.createRange(); range.setStart(node, offset);
                                   range.setEnd(node, offset + 1); return range.getBoundingClientRect().left; };
  const headed = nodes[at].textContent.indexOf(header, nodes[at].textContent.indexOf(line));
  return [left(nodes[at], headed), left(row, row.textContent.indexOf(value))];
})(%s, %s, %s)"""
#: What the steps say in each language: the draft's rows counted, the final query named, the result's rows.
TRACE_WORDS = {"en": ("… 40 more rows (41 rows in all)", "(the final query, shown above)",
                      "… 5 more rows (6 rows in all)"),
               "de": ("… 40 weitere Zeilen (41 Zeilen insgesamt)", "(die endgültige Abfrage, oben gezeigt)",
                      "… 5 weitere Zeilen (6 Zeilen insgesamt)"),
               "fr": ("… 40 lignes de plus (41 lignes en tout)", "(la requête finale, montrée ci-dessus)",
                      "… 5 lignes de plus (6 lignes en tout)")}


@pytest.mark.parametrize("language", ["en", "de", "fr"])
def test_the_steps_tell_the_truth_in_the_askers_language(mediawiki, llm_server, world, browser, tmp_path,
                                                         language):
    forum = mediawiki.fresh_forum(f"trace {language}")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan(language)), world)
    answer(mediawiki, rig, forum, language)
    open_page(browser, mediawiki, forum)
    browser.evaluate("[...document.querySelectorAll('.mw-collapsible-toggle')].pop().click(), true")
    shown = browser.evaluate("[...document.querySelectorAll('.mw-collapsible-content')].pop().innerText")
    # (MediaWiki shows a space before ";" as a no-break space, inside <nowiki> too)
    lines = [line.replace("\xa0", " ").strip() for line in shown.splitlines()]
    draft_rows, final, final_rows = TRACE_WORDS[language]
    assert lines[lines.index(DRAFT) + 3] == draft_rows  # the draft in full, a row, and how many rows in all
    assert lines[lines.index("3. Keep the rivers longer than 500 km and add their basins.") + 1] == final
    assert lines[-2] == final_rows and lines[-1] == "4. The final query answers it."  # no empty stop() step
    assert not any(line in ("{", "}", "stop()") for line in lines)
    if language != "en":
        assert not any(word in shown for word in ("more", "rows", "query above", "found")), shown
    header, value = browser.evaluate(COLUMN % (json.dumps("→ river  riverLabel"), json.dumps("length"),
                                               json.dumps("1233")))
    assert header == value  # the columns line up on screen


def answer(mediawiki, rig: BotRig, forum: str, language: str, *options: str) -> str:
    """The bot's reply to the rivers question in *language*, as saved."""
    heading, question, _ = QUESTIONS[language]
    assert rig.run(forum, "--once", "--live", *options).code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section(heading, question))
    done = rig.run(forum, "--once", "--live", *options)
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]
    return mediawiki.page_text(forum).split(question, 1)[1].split("\n", 1)[1]


#: In the page: the line of the reply that holds *text*, what it shows and the user pages it links.
LINE = """((text) => {
  const line = [...document.querySelectorAll('#mw-content-text dd')].filter((dd) => dd.innerText.includes(text))
                                                                    .pop();
  return {text: line.innerText, users: [...line.querySelectorAll("a")].map((a) => a.title.split(" (")[0])};
})(%s)"""


def test_the_asker_is_addressed_as_the_forum_does_unless_bot_ini_says_not_to(mediawiki, llm_server, world, browser,
                                                                            tmp_path):
    forum = mediawiki.fresh_forum("asker addressed")
    rig = BotRig(mediawiki, tmp_path, llm_server(plan("en")), world)
    reply = answer(mediawiki, rig, forum, "en")
    assert reply.startswith(":{{re|1=Alice}} These are the rivers in Germany")
    open_page(browser, mediawiki, forum)
    first = browser.evaluate(LINE % json.dumps("These are the rivers"))
    assert first["text"].startswith("@Alice: These are the rivers") and first["users"][0] == "User:Alice"

    quiet = mediawiki.fresh_forum("asker not addressed")
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "bot.ini").write_text("[bot]\nping_asker = false\n")
    rig = BotRig(mediawiki, tmp_path / "quiet", llm_server(plan("en")), world)
    reply = answer(mediawiki, rig, quiet, "en", "--config", str(tmp_path / "quiet" / "bot.ini"))
    assert reply.startswith(":These are the rivers in Germany") and "{{re" not in reply
