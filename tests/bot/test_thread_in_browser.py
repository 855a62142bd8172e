"""The thread as a reader sees it: the bot's real reply on the real MediaWiki, rendered in headless Chromium.

The bot answers a question (``python -m bot.run``, in this process); a human
then replies to the bot the way DiscussionTools does (one ``:`` more than the
indentation of the comment whose signature it answers, the level read from
the rendered HTML as DiscussionTools reads it: the ``<dd>``/``<li>`` around
the signature).  In the browser the human's reply must sit to the right of
every line of the bot's, the bot's lines at one level, the steps hidden until
the toggle is clicked, and then every step shown inside the collapsed block,
line by line.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest

from tests.support.bot_rig import BotRig
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.forum_text import new_section
from tests.support.llm_server import ErrorReply, ToolCallReply
from tests.support.mediawiki import BOT_USER
from tests.support.wikidata_server import select

pytestmark = pytest.mark.mediawiki
THOUGHTS = ("Find the doctoral advisors of Euler first.", "Keep only the advisors who are humans.")
QUERIES = (EULER_ADVISORS_QUERY, "SELECT ?advisor WHERE { wd:Q7604 wdt:P184 ?advisor . ?advisor wdt:P31 wd:Q5 . }")
REPLY_TO_BOT = "Thanks, that is what I needed."


def two_steps(body):
    if "tools" not in body:
        return ErrorReply(400, "no pruning expected")
    done = sum(message["role"] == "tool" for message in body["messages"])
    if done < 2:
        return ToolCallReply("execute_sparql", {"thought": THOUGHTS[done], "sparql": QUERIES[done]})
    return ToolCallReply("stop", {"thought": "That answers it.", "language": "en",
                                  "explanation": "The query lists Euler's doctoral advisors (P184)."})


class SignatureLevel(HTMLParser):
    """DiscussionTools' indentation level of each signature link to *user*: its ``<dd>`` and ``<li>`` ancestors."""

    VOID = {"br", "img", "hr", "input", "meta", "link", "wbr"}

    def __init__(self, user: str) -> None:
        super().__init__(convert_charrefs=True)
        self.user = user
        self.stack: list[str] = []
        self.levels: list[int] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        self.stack.append(tag)
        href = dict(attrs).get("href") or ""
        if tag == "a" and (href.endswith(f"User:{self.user}") or f"title=User:{self.user}&" in href):
            self.levels.append(sum(name in ("dd", "li") for name in self.stack))

    def handle_endtag(self, tag):
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass


def signature_levels(html: str, user: str) -> list[int]:
    reader = SignatureLevel(user)
    reader.feed(html)
    return reader.levels


#: In the page: where each piece of text starts on screen, its list level, what a reader sees.
MEASURE = """(() => {
  const root = document.querySelector('#mw-content-text');
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  const find = (text) => nodes.filter((node) => node.textContent.includes(text)).pop();
  // Where the line holding a text starts: the left edge of its list item (or of its paragraph).
  const left = (node) => { let e = node.parentElement;
                           while (e !== root && !['DD', 'LI', 'P'].includes(e.tagName)) e = e.parentElement;
                           return e.getBoundingClientRect().left; };
  const level = (node) => { let count = 0; for (let e = node.parentElement; e && e !== root; e = e.parentElement)
                              if (e.tagName === 'DD' || e.tagName === 'LI') count++; return count; };
  const lead = find('The query lists Euler');
  const signature = [...root.querySelectorAll('a')].filter((a) => a.textContent === '%(bot)s').pop();
  const reply = nodes.slice(nodes.indexOf(lead), nodes.indexOf(signature.firstChild) + 1)
                     .filter((node) => node.textContent.trim() && node.parentElement.offsetParent !== null);
  const content = [...root.querySelectorAll('.mw-collapsible-content')].pop();
  const code = content.querySelector('.mw-code');
  return {replyLefts: reply.map(left), replyLevels: reply.map(level), human: left(find(%(human)s)),
          question: left(find('Who advised Euler?')), hidden: content.offsetParent === null,
          visible: root.innerText, whiteSpace: getComputedStyle(code).whiteSpace,
          contentText: content.textContent};
})()"""


@pytest.fixture
def rig(mediawiki, llm_server, wikidata_server, tmp_path) -> BotRig:
    wikidata = wikidata_server(sparql=lambda query: select(["advisor", "advisorLabel"], [
        {"advisor": "Q124500", "advisorLabel": {"type": "literal", "value": "Johann Bernoulli", "xml:lang": "en"}}]))
    wikidata.add(*euler_entities())
    return BotRig(mediawiki, tmp_path, llm_server(two_steps), wikidata)


def test_a_reply_to_the_bot_renders_under_it_and_the_steps_stay_in_their_collapsed_block(mediawiki, rig, browser,
                                                                                       request):
    forum = mediawiki.fresh_forum(request.node.name)
    assert rig.run(forum, "--once", "--live").code == 0
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    done = rig.run(forum, "--once", "--live")
    assert done.code == 0 and len(rig.bot_edits(forum)) == 1, done.stderr[-3000:]

    # DiscussionTools answers a comment one level deeper than the list level of its signature.
    level = signature_levels(mediawiki.rendered_html(forum), BOT_USER)[-1]  # the last comment: the bot's reply
    assert level == 1
    reply = ":" * (level + 1) + f"{REPLY_TO_BOT} [[User:Alice|Alice]] ([[User talk:Alice|talk]]) " \
                                "13:00, 20 November 2026 (UTC)"
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + "\n" + reply, "a reply to the bot")

    url = mediawiki.api_url.replace("/api.php", f"/index.php?title={forum.replace(' ', '_')}")
    browser.open(url, "window.mw && mw.loader.getState('jquery.makeCollapsible') === 'ready' && "
                      "document.querySelector('.mw-collapsible-toggle')")
    seen = browser.evaluate(MEASURE % {"bot": BOT_USER, "human": json.dumps(REPLY_TO_BOT)})
    assert set(seen["replyLevels"]) == {1}, seen["replyLevels"]  # every line of the bot's reply at one level
    assert seen["question"] < min(seen["replyLefts"]) == max(seen["replyLefts"]) < seen["human"]
    assert seen["hidden"] and seen["whiteSpace"] == "pre-wrap"
    assert not any(thought in seen["visible"] for thought in THOUGHTS)  # collapsed: no step shows
    assert all(thought in seen["contentText"] for thought in THOUGHTS)  # every step inside the block

    browser.evaluate("[...document.querySelectorAll('.mw-collapsible-toggle')].pop().click(), true")
    shown = browser.evaluate("document.querySelector('#mw-content-text').innerText")
    lines = [line.strip() for line in shown.splitlines()]
    assert f"1. {THOUGHTS[0]}" in lines and f"2. {THOUGHTS[1]}" in lines  # the steps, line by line
    after = browser.evaluate(MEASURE % {"bot": BOT_USER, "human": json.dumps(REPLY_TO_BOT)})
    assert not after["hidden"] and min(after["replyLefts"]) == max(after["replyLefts"]) < after["human"]
