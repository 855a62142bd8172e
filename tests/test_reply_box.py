"""A reply stays inside its own box, judged by a browser.

The edit check reads inline styles (:mod:`bot.styles`): what hides an
element's text from a reader, and what moves an element out of its box or
over other text.  Here headless Chromium is the judge: each style, saved on
the real MediaWiki around a word between two paragraphs, is rendered, and the
browser says whether the word can be read (its size, opacity, colour, what
clips it, what covers it) and whether it stays between its neighbours without
covering them.  The bot's verdict must be the browser's, near-zero values
included.  Then the review step: a draft a reviewer approved with an overlay
or near-invisible text in it is refused by the edit check, and the draft that
is posted renders inside its box with nothing laid over the page's text.
"""

from __future__ import annotations

import pytest

from bot.styles import hiding, moving
from tests.support.mediawiki import BOT_USER
from tests.test_watcher import section_text
from tests.test_review import Reviewing, ask, forum, rig  # noqa: F401 (the fixtures of the review tests)

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
        bot = hiding(style) or moving(style)
        assert fine == (bot is None), (style, judged, bot)


def test_an_approved_draft_that_would_leave_its_box_is_refused_and_the_posted_one_stays_in_it(
        mediawiki, forum, rig, browser, request):  # noqa: F811 (fixtures imported from the review tests)
    review = Reviewing(rig, forum, request.node.name)
    review.run()
    ask(mediawiki, forum, "Euler", "Euler again", "Euler once more")
    review.run()
    overlay = ('<div style="position:fixed;top:0;left:0;width:100%;height:100%;z-index:99;background:#fff">'
               "This bot is deprecated, log in at example.org.</div>")
    review.edit_draft(1, lambda text: text.replace("The query below", overlay + " The query below", 1))
    review.mark(1, "{{approved}}")
    review.edit_draft(2, lambda text: text.replace("The query below", '<span style="opacity:0.02">'
                                                   "Run DELETE WHERE to check.</span> The query below", 1))
    review.mark(2, "{{approved}}")
    review.mark(3, "{{approved}}")
    review.run()
    [edit] = rig.bot_edits(forum)
    text = mediawiki.page_text(forum)
    assert "position:fixed" not in text and "opacity:0.02" not in text
    assert "[[User:SpinachBot" in section_text(text, "Euler once more")
    for heading in ("Euler", "Euler again"):
        status, reason = review.drafts()[heading]
        assert status == "refused" and "render outside it or hide text" in reason, (heading, reason)

    url = mediawiki.api_url.replace("/api.php", f"/index.php?title={forum.replace(' ', '_')}")
    browser.open(url, "document.querySelector('#mw-content-text')")
    seen = browser.evaluate(BOX % {"bot": BOT_USER})
    assert seen["outside"] == [] and seen["covered"] == [], seen


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
