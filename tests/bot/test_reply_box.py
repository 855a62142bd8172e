"""A reply stays inside its own box, judged by a browser.

The edit check reads the inline styles of the page around a reply
(:mod:`bot.styles`): what hides an element's text from a reader, or moves it
away or over other text, where someone left it open above the reply's place.
Here headless Chromium is the judge: each style, saved on the real MediaWiki
around a word between two paragraphs, is rendered, and the browser says
whether the word can be read (its size, opacity, colour, what clips it, what
covers it) and whether it stays between its neighbours without covering them.
The bot's verdict must be the browser's, near-zero values included.  Then the
review step: a draft a reviewer approved with 30 forms of markup that would
cover, hide or change the page is posted as the bot renders it, and renders
inside its box with nothing laid over the page's text, now and after the
next edit.
"""

from __future__ import annotations

import time

import pytest

from bot.styles import hiding
from tests.support.mediawiki import BOT_USER
from tests.support.forum_text import signature
from tests.support.reviewing import Reviewing, ask

pytestmark = pytest.mark.mediawiki

#: Styles a reader cannot read through, or that move text out of its place or over other text.
BAD = ["font-size:0.01px", "font-size:1%", "opacity:0.02", "opacity:2%", "height:1px;overflow:hidden",
       "max-height:2px;overflow:hidden", "line-height:0.01;height:0;overflow:hidden", "color:rgba(0,0,0,0)",
       "color:transparent", "margin-top:-60px", "margin:-3em 0 0 0", "position:relative;top:-40px",
       "position:absolute;left:-9999px", "position:fixed;top:0;left:0;width:100%;height:100%;background:#fff",
       "transform:translateY(-50px)", "text-indent:-9999px", "width:2px;overflow:hidden", "display:none",
       "visibility:hidden", "letter-spacing:-1em", "font-\\73 ize:0.2px"]
#: Styles editors use that leave the text readable and in its place.
GOOD = ["font-size:small", "font-size:85%", "opacity:0.8", "color:#202122", "border:1px solid #c8ccd1;padding:0 0.5em",
        "background:#eaf3ff", "margin-left:1.6em", "max-height:40em;overflow:auto", "font-weight:bold",
        "line-height:1.4", "padding:0.5em"]

#: For each probe: can its word be read, and does it stay between its neighbours without covering them?
JUDGE = """(() => {
  const visibleArea = (element) => {
    let rect = element.getBoundingClientRect();
    let box = {left: rect.left, top: rect.top, right: rect.right, bottom: rect.bottom};
    for (let e = element.parentElement; e && e !== document.body; e = e.parentElement) {
      const style = getComputedStyle(e);
      if (style.overflow !== 'visible' || style.overflowX !== 'visible' || style.overflowY !== 'visible') {
        const clip = e.getBoundingClientRect();
        box = {left: Math.max(box.left, clip.left), top: Math.max(box.top, clip.top),
               right: Math.min(box.right, clip.right), bottom: Math.min(box.bottom, clip.bottom)};
      }
    }
    const page = document.documentElement;
    box = {left: Math.max(box.left, -window.scrollX), top: Math.max(box.top, -window.scrollY),
           right: Math.min(box.right, page.scrollWidth), bottom: Math.min(box.bottom, page.scrollHeight)};
    return Math.max(0, box.right - box.left) * Math.max(0, box.bottom - box.top);
  };
  const shown = (element) => {
    const rect = element.getBoundingClientRect();
    if (rect.width < 1 || rect.height < 1) return false;
    let opacity = 1;
    for (let e = element; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
    const style = getComputedStyle(element);
    const alpha = (style.color.match(/rgba\\([^)]*,\\s*([\\d.]+)\\)/) || [null, '1'])[1];
    if (opacity < 0.2 || parseFloat(style.fontSize) < 6 || parseFloat(alpha) === 0) return false;
    if (style.visibility !== 'visible') return false;
    const ink = document.createRange();
    ink.selectNodeContents(element);
    const glyphs = ink.getBoundingClientRect();
    if (glyphs.width < element.textContent.length * 2) return false;  // letters squeezed together
    return visibleArea(element) >= 0.5 * rect.width * rect.height;
  };
  const uncovered = (element) => {
    element.scrollIntoView({block: 'center'});
    const rect = element.getBoundingClientRect();
    const hit = document.elementFromPoint(rect.left + rect.width / 2, rect.top + rect.height / 2);
    return !!hit && (hit === element || element.contains(hit));
  };
  const out = {};
  const probes = [...document.querySelectorAll('[id^=probe-]')];
  const saved = probes.map((probe) => probe.style.cssText);
  for (const probe of probes) {
    // one probe at a time: an overlay judged earlier must not cover the others
    probes.forEach((other, index) => { other.style.cssText = other === probe ? saved[index] : 'display:none'; });
    const number = probe.id.slice(6);
    const word = document.getElementById('word-' + number);
    const above = document.getElementById('above-' + number);
    const below = document.getElementById('below-' + number);
    const inPlace = !word || (word.getBoundingClientRect().top >= above.getBoundingClientRect().bottom - 1 &&
                              word.getBoundingClientRect().bottom <= below.getBoundingClientRect().top + 1);
    out[number] = {readable: !!word && shown(word) && uncovered(word), inPlace: inPlace,
                   neighbours: uncovered(above) && uncovered(below)};
  }
  probes.forEach((probe, index) => { probe.style.cssText = saved[index]; });
  return out;
})()"""


def test_the_bots_reading_of_a_style_is_the_browsers(mediawiki, browser, request):
    styles = BAD + GOOD
    page = "".join(f'<p id="above-{n}">Text above {n}.</p>\n<div id="probe-{n}" style="{style}"><span id="word-{n}">'
                   f"Readable words {n}</span></div>\n<p id=\"below-{n}\">Text below {n}.</p>\n"
                   for n, style in enumerate(styles))
    title = f"Style judge {request.node.name}"[:80]
    mediawiki.edit_as_human(title, page, "styles to judge")
    url = mediawiki.api_url.replace("/api.php", f"/index.php?title={title.replace(' ', '_')}")
    browser.open(url, "document.getElementById('probe-0')")
    seen = browser.evaluate(JUDGE)
    for number, style in enumerate(styles):
        judged = seen[str(number)]
        fine = judged["readable"] and judged["inPlace"] and judged["neighbours"]
        bot = hiding(style)
        assert fine == (bot is None), (style, judged, bot)


#: What a reviewer may write into a draft that would cover, hide or change the page if it were posted as markup:
#: styles in every spelling, elements nested until they vanish, markup whose value depends on who saves the page,
#: when, or what else exists, templates, tables, tags and switches.  None of it may reach the forum as markup.
HOSTILE_DRAFT_LINES = [
    '<div style="-webkit-transform:translate(0,-400px) scale(20);background:#fff">Covered</div>',
    '<div style="outline:3000px solid #fff">Outlined</div>', '<span style="box-shadow:0 0 0 3000px #fff">S</span>',
    '<div style="border:1px solid;border-image:linear-gradient(#fff,#fff) 1 / 1 / 900px">B</div>',
    '<div style="margin-top:calc(-1 * 600px)">Lifted</div>', '<span style="text-shadow:0 -300px 0 #000">T</span>',
    '<div style="-webkit-box-reflect:above 0">R</div>', '<div style="-webkit-clip-path:inset(50%)">C</div>',
    '<div style="-webkit-mask-image:linear-gradient(transparent,transparent)">M</div>',
    '<div style="content-visibility:hidden">Hidden</div>', '<div style="zoom:0.02">Zoomed</div>',
    '<div style="--h:none;display:var(--h)">Var</div>', '<span style="color:rgba(0,0,0,0.01)">Faint</span>',
    '<span style="color:#fff">White</span>', '<span style="-webkit-text-fill-color:transparent">Fill</span>',
    '<font color="#ffffff">Font</font>', "<small>" * 20 + "Tiny" + "</small>" * 20,
    '<span style="font-size:50%">' * 5 + "Halved" + "</span>" * 5,
    '<span style="opacity:0.3">' * 3 + "Faded" + "</span>" * 3,
    "{{#ifeq:{{REVISIONUSER}}|" + BOT_USER + '|ok|<div style="outline:3000px solid #fff">Later</div>}}',
    '{{#ifexpr:{{#time:U}} > 1|<div style="position:fixed;inset:0;background:#fff">Clock</div>|quiet}}',
    "{{REVISIONID}} {{int:edit}} {{#ifexist:Main Page|exists|not}} {{PAGENAME}} {{CURRENTTIMESTAMP}}",
    "__NOTOC__ __NOINDEX__ {{DISPLAYTITLE:Gone}} [[Category:Spam]] ~~~~ ~~~ ~~~~~",
    '{| style="position:fixed;top:0;left:0;width:100%;height:100%;background:#fff"\n| Table\n|}',
    '<div class="mw-collapsible" style="position:absolute;top:0">Looks like the steps</div>',
    "&#123;&#123;#time:U&#125;&#125; &lt;div style=&quot;zoom:0.01&quot;&gt;Entities&lt;/div&gt;",
    '<templatestyles src="X/styles.css" /> <gallery>File:X.png|A caption</gallery> <ref>note</ref>',
    '<span style="position\\3a fixed;top:0">Escaped</span> <span style="POSITION:FIXED">Upper</span>',
    "[https://example.org Log in here] [[Special:UserLogout|sign out]] [[File:X.png|9000px]]",
]


def test_an_approved_draft_is_posted_as_the_bot_renders_it_and_stays_in_its_box_for_good(
        mediawiki, forum, rig, browser, request):
    review = Reviewing(rig, forum, request.node.name)
    review.run()
    ask(mediawiki, forum, "Euler")
    review.run()
    lines = "\n".join(f":{line}" for line in HOSTILE_DRAFT_LINES)
    review.edit_draft(1, lambda text: text.replace(":The query lists", lines + "\n:Checked. The query lists", 1)
                      .replace("wdt:P184", 'wdt:P184 <div style="position:fixed">', 1))
    review.mark(1, "{{approved}}")
    review.run()
    [edit] = rig.bot_edits(forum)
    assert review.drafts()["Euler"][0] == "posted"
    assert "'''Posted'''" in review.draft(1) and "shows as text" in review.draft(1)

    url = mediawiki.api_url.replace("/api.php", f"/index.php?title={forum.replace(' ', '_')}")
    browser.open(url, "document.querySelector('#mw-content-text')")
    seen = browser.evaluate(BOX % {"bot": BOT_USER})
    assert seen["outside"] == [] and seen["covered"] == [], seen
    reply = browser.evaluate(REPLY % {"heading": "Euler"})
    # Structure, not style, is judged: the reply holds only the elements the bot's own markup makes.
    assert {element["tag"] for element in reply["elements"]} <= BOTS_OWN_ELEMENTS, reply["elements"]
    styled = [element for element in reply["elements"] if element["style"] not in ("", COLLAPSIBLE_STYLE)]
    # The one style the page's own script adds: the collapsed steps' content, hidden until a reader opens it.
    assert all(element["cls"] == "mw-collapsible-content" and element["style"] == "display: none"
               for element in styled), styled
    for word in ("outline:3000px", "{{REVISIONUSER}}", "{{#time:U}}", "<font color", "-webkit-transform",
                 "Checked. The query lists"):
        assert word in reply["text"], word  # shown as text, as the reviewer wrote it
    assert "[[Category:Spam]]" not in mediawiki.page_text(forum) and "{{#" not in mediawiki.page_text(forum)

    # What was posted renders the same after the next ordinary edit, and as time passes: MediaWiki parses the
    # new revision afresh (the page's script, which dresses the collapsed block after loading, is left out).
    before = section_html(mediawiki, forum, "Euler")
    time.sleep(1.1)  # the clock the markup would read moves on: {{CURRENTTIMESTAMP}}, {{#time:U}}
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + "\n== Later ==\nAn unrelated question. "
                            + signature("Bob", 59) + "\n", "a new question")
    assert section_html(mediawiki, forum, "Euler") == before


def section_html(mediawiki, title: str, heading: str) -> str:
    """The HTML MediaWiki's parser makes of section *heading* of page *title* as it stands."""
    html = mediawiki.rendered_html(title)
    start = html.index(f'id="{heading}"')
    ends = [found for found in (html.find("<h2", start), html.find("<!--", start)) if found >= 0]
    return html[start:min(ends, default=len(html))]


#: The elements the bot's replies are made of (a paragraph of the list, links, the {{SPARQL}} template's code and
#: link, the preview's table, the collapsed steps, the footer).
BOTS_OWN_ELEMENTS = {"dd", "dl", "a", "span", "div", "pre", "code", "table", "tbody", "tr", "th", "td", "br", "small",
                     "b", "p", "ul", "li"}
COLLAPSIBLE_STYLE = "border:1px solid #c8ccd1;padding:0 0.5em"

#: The bot's reply in section %(heading)s, as the page shows it: everything below the question up to the next heading
#: (its elements with their inline styles, its text, its HTML).
REPLY = """(() => {
  const heading = [...document.querySelectorAll('#mw-content-text h2')].find(
    (h) => h.textContent.replace('[edit]', '').trim() === '%(heading)s');
  const parts = [];
  for (let e = heading.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) parts.push(e);
  const reply = parts.slice(1);  // the question's paragraph first
  const elements = reply.flatMap((part) => [part, ...part.querySelectorAll('*')]).map((e) => ({
    tag: e.tagName.toLowerCase(), style: (e.getAttribute('style') || '').replace(/;$/, ''),
    cls: e.className}));
  return {elements, text: reply.map((part) => part.textContent).join('\\n'),
          html: reply.map((part) => part.outerHTML).join('\\n')};
})()"""


#: The bot's reply on the page: every element of it inside the box of its lines, and every piece of text on the
#: page shown where it stands (nothing laid over it).
BOX = """(() => {
  const root = document.querySelector('#mw-content-text');
  const signature = [...root.querySelectorAll('a')].filter((a) => a.textContent === '%(bot)s').pop();
  let line = signature;
  while (line.tagName !== 'DD') line = line.parentElement;
  const list = line.parentElement;
  const box = list.getBoundingClientRect();
  const outside = [...list.querySelectorAll('*')].filter((e) => {
    const r = e.getBoundingClientRect();
    return r.width && r.height && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
                                   r.bottom > box.bottom + 1);
  }).map((e) => e.outerHTML.slice(0, 120));
  const covered = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const node = walker.currentNode;
    if (!node.textContent.trim() || !node.parentElement.offsetParent) continue;
    node.parentElement.scrollIntoView({block: 'center'});
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getClientRects()[0];
    if (!r) continue;
    const hit = document.elementFromPoint(r.left + Math.min(r.width, 4) / 2, r.top + r.height / 2);
    if (hit && hit !== node.parentElement && !node.parentElement.contains(hit) && !hit.contains(node.parentElement))
      covered.push(node.textContent.trim().slice(0, 60));
  }
  return {outside, covered};
})()"""
