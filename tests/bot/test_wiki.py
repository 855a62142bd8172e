"""The write layer against a real MediaWiki, in this process: may-I-write decisions and MediaWiki's checks.

pywikibot talks to the test wiki started by ``tests/support/mediawiki.py``; the
edits below are real saves, read back through the API.
"""

import html
import re
import time

import pytest

from bot.edit_check import EditRefused
from bot.forum import parse_sections
from bot.wiki import EmergencyStop, ForumPage
from tests.support.mediawiki import BOT_USER, PORT, PhpServer, group_members

#: One test process runs them all: they share one login.
pytestmark = [pytest.mark.mediawiki, pytest.mark.xdist_group("wiki")]

QUESTION = ("== Euler's advisors ==\nWho advised Euler? [[User:Alice|Alice]] ([[User talk:Alice|talk]]) "
            "12:00, 20 November 2026 (UTC)\n")
PAGE = "Lead text of the forum.\n\n" + QUESTION + "\n== Later ==\nAnother question. [[User:Alice|Alice]] " \
       "12:05, 20 November 2026 (UTC)\n"
REPLY = (':Here is a query: {{SPARQL|query=SELECT ?x WHERE { ?x wdt:P31 wd:Q5 } }}\n'
         ':<div class="mw-collapsible mw-collapsed">Steps: 1. searched.</div>\n:Answered by a bot. ~~~~')


@pytest.fixture
def forum(site, mediawiki, request):
    title = f"Wikidata:Wiki tests/{request.node.name[:60]}"
    mediawiki.edit_as_human(title, PAGE, "forum page")
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "clear the stop page")
    return ForumPage(site, title, "User:{username}/Stop", live=True)


def key_of(text: str, heading: str) -> str:
    return next(section.key for section in parse_sections(text) if section.heading == heading)


@pytest.mark.parametrize("text, allowed", [
    ("plain text", True),
    ("{{nobots}}", False),
    ("{{Template:Nobots}}", False),
    ("{{template:nobots}}", False),
    ("{{nobots|OtherBot}}", True),
    (f"{{{{nobots|OtherBot,{BOT_USER}}}}}", False),
    ("{{bots|deny=all}}", False),
    ("{{bots|deny=<!-- -->all}}", False),
    (f"{{{{bots|deny={BOT_USER}<!-- -->}}}}", False),
    ("{{bots|deny=OtherBot}}", True),
    ("{{bots|allow=OtherBot}}", False),
    (f"{{{{bots|allow={BOT_USER}}}}}", True),
    ("<!-- {{nobots}} -->", True),
    ("<nowiki>{{nobots}}</nowiki>", True),
])
def test_bots_and_nobots_are_read_as_pywikibot_reads_them(site, text, allowed):
    forum = ForumPage(site, "Wikidata:Request a query", "User:{username}/Stop")
    assert (forum.refusal(text) is None) is allowed
    assert (forum.refusal(section=parse_sections(f"== Q ==\n{text} [[User:Alice|Alice]]\n")[0]) is None) is allowed


def test_nobots_in_another_section_does_not_keep_the_bot_out_of_this_one(forum, mediawiki):
    text = PAGE + "\n== Humans only ==\n{{nobots}} Please, no bots. [[User:Alice|Alice]] 12:09, 20 November " \
                  "2026 (UTC)\n"
    mediawiki.edit_as_human(forum.title, text)
    sections = {section.heading: section for section in parse_sections(text)}
    assert forum.refusal(text, sections["Humans only"]) == "the section opts out of bots"
    assert forum.refusal(text, sections["Euler's advisors"]) is None
    outcome = forum.post_reply(key_of(text, "Euler's advisors"), REPLY, "reply")
    assert outcome.status == "posted"
    assert "Steps: 1. searched." in mediawiki.page_text(forum.title).split("== Humans only ==")[0]
    lead_opt_out = "{{bots|deny=<!-- -->all}}\n" + text
    mediawiki.edit_as_human(forum.title, lead_opt_out)
    assert forum.post_reply(key_of(text, "Later"), REPLY, "reply").status == "opted-out"


def test_a_reply_is_saved_against_the_revision_it_was_built_on(forum, mediawiki):
    base = mediawiki.revisions(forum.title)[0]["revid"]
    outcome = forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "/* Euler's advisors */ reply")
    assert outcome.status == "posted"
    saved = mediawiki.api(action="query", prop="revisions", revids=str(outcome.revision),
                          rvprop="ids|user|content", rvslots="main")["query"]["pages"][0]["revisions"][0]
    assert saved["parentid"] == base and saved["user"] == BOT_USER
    text = saved["slots"]["main"]["content"]
    assert text.startswith(PAGE.split("\n== Later ==")[0].rstrip() + "\n:Here is a query:")
    assert re.search(r":Answered by a bot\. \[\[User:SpinachBot\|SpinachBot\]\] \(\[\[User talk:SpinachBot\|talk"
                     r"\]\]\) \d\d:\d\d, \d+ \w+ \d{4} \(UTC\)\n", text)
    assert forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "again").status == "already-answered"


@pytest.mark.parametrize("payload, reason", [
    ("[[Category:Spam]]", "categories would appear"),
    ("{{Some other template}}", "templates would appear"),
    ("[https://example.org/ a link]", "external links would appear"),
    ("[[User:Mallory]]", "user links would appear"),  # no one in the thread
    ("[[User:Alice]] [[User:Alice]]", "user links would appear"),  # the asker, twice
    ("[[Main Page]] {{Q|Q1}}", "links would appear"),
    ("[[Wikidata:Request a query/Archive/2019/11#A|another forum's archive]]", "links would appear"),
    ("\n== A fake heading ==\n", "sections change"),
    ("__NOINDEX__", "page properties would appear"),
    ("<!-- hides the rest", "pre-save transform"),
    ("<nowiki>[[Category:Spam]]</nowiki> \x7f'\"`UNIQ--nowiki-00000000-QINU`\"'\x7f", "pre-save transform"),
])
def test_mediawiki_refuses_an_edit_that_does_more_than_add_the_reply(forum, mediawiki, payload, reason):
    before = mediawiki.revisions(forum.title)
    with pytest.raises(EditRefused, match=re.escape(reason)):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY.replace("Steps: 1.", "Steps: 1. " + payload),
                         "reply")
    assert mediawiki.revisions(forum.title) == before


def test_a_reply_may_link_once_more_exactly_the_writers_of_its_thread_it_addresses(forum, mediawiki):
    key = key_of(PAGE, "Euler's advisors")
    reply = REPLY.replace(":Here is a query:", ":@[[User:Alice|Alice]]: Here is a query:")
    with pytest.raises(EditRefused, match=re.escape("user links would appear: ['User:Alice']")):
        forum.post_reply(key, reply, "reply")  # a writer of the thread the reply does not say it addresses
    mallory = REPLY.replace(":Here is a query:", ":@[[User:Alice|Alice]], @[[User:Mallory|Mallory]]: Here is a query:")
    with pytest.raises(EditRefused, match=re.escape("user links would appear: ['User:Mallory']")):
        forum.post_reply(key, mallory, "reply", addressed=("Alice", "Mallory"))  # no writer of the thread
    assert forum.post_reply(key, reply, "reply", addressed=("Alice",)).status == "posted"
    assert ":@[[User:Alice|Alice]]: Here is a query:" in mediawiki.page_text(forum.title)


def test_a_link_to_the_forums_own_archive_is_the_replys_own(forum, mediawiki):
    earlier = f"An earlier request looks similar: [[{forum.title}/Archive/2019/11#Euler|Euler]] (2019-11)"
    reply = REPLY.replace(":Answered by a bot.", f":{earlier}\n:Answered by a bot.")
    assert forum.post_reply(key_of(PAGE, "Euler's advisors"), reply, "reply").status == "posted"
    assert earlier in mediawiki.page_text(forum.title)


def test_a_trace_block_left_open_is_refused(forum, mediawiki):
    block = ("Here is a query.\n<div class=\"mw-collapsible mw-collapsed\">\nStep 1.\n\nStep 2.\n</div>\n"
             ":Answered by a bot. ~~~~")
    assert forum.post_reply(key_of(PAGE, "Later"), block, "reply").status == "posted"
    with pytest.raises(EditRefused, match="collapsible block is not closed"):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), block.replace("</div>", "<div>"), "reply")


def test_a_trace_whose_steps_render_outside_its_block_is_refused(forum, mediawiki):
    # Each step on its own ":" line: the parser closes the block at the end of the first line.
    spilled = (':Here is a query.\n:<div class="mw-collapsible mw-collapsed">Step 1.\n:Step 2.\n:Step 3.</div>\n'
               ':Answered by a bot. ~~~~')
    with pytest.raises(EditRefused, match="renders outside it"):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), spilled, "reply")
    assert len(mediawiki.revisions(forum.title)) == 1


def test_a_reply_without_a_signature_that_expands_is_refused(forum, mediawiki):
    with pytest.raises(EditRefused):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY.replace("~~~~", "<nowiki>~~~~</nowiki>"), "r")
    assert len(mediawiki.revisions(forum.title)) == 1


def test_the_stop_page_blocks_a_save_and_emptying_it_lets_edits_resume(forum, mediawiki):
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "stop!", "stop the bot")
    assert forum.stop_title == f"User:{BOT_USER}/Stop"
    with pytest.raises(EmergencyStop, match=f"User:{BOT_USER}/Stop is not empty"):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "reply")
    mediawiki.edit_as_human(f"User:{BOT_USER}/Stop", "", "resume")
    assert forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "reply").status == "posted"


def test_simulate_is_a_dry_run_never_a_fake_success(forum, mediawiki):
    import pywikibot

    pywikibot.config.simulate = True
    try:
        assert not forum.writes
        outcome = forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "reply")
    finally:
        pywikibot.config.simulate = False
    assert outcome.status == "previewed" and outcome.revision is None
    assert len(mediawiki.revisions(forum.title)) == 1


def test_a_stuck_login_is_repaired_before_the_next_save(forum, site):
    from pywikibot.login import LoginStatus

    # What a re-login that raised leaves behind: pywikibot then neither logs in nor refreshes tokens again.
    site._loginstatus = LoginStatus.IN_PROGRESS
    del site.userinfo
    assert forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "reply").status == "posted"
    assert site._loginstatus == LoginStatus.AS_USER


HIDDEN_NOTE = ('<div style="display:none">\n== Hidden note ==\nfor admins only. [[User:Mallory|Mallory]] '
               '12:05, 20 November 2026 (UTC)\n</div>\n')


def rendered_under(mediawiki, title: str) -> dict[str, str]:
    """The page's text a reader sees under each heading (what a display:none element holds left out)."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__(convert_charrefs=True)
            self.stack, self.heading, self.texts = [], "lead", {"lead": ""}

        def handle_starttag(self, tag, attrs):
            if tag not in ("br", "hr", "img", "wbr", "meta", "link"):
                self.stack.append((tag, "display:none" in (dict(attrs).get("style") or "").replace(" ", "")))
            if tag in ("h1", "h2"):
                self.heading = ""

        def handle_endtag(self, tag):
            while self.stack and self.stack.pop()[0] != tag:
                pass
            if tag in ("h1", "h2"):
                self.heading = self.heading.replace("[edit]", "").strip()

        def handle_data(self, data):
            if any(hidden for _, hidden in self.stack):
                return
            if any(tag in ("h1", "h2") for tag, _ in self.stack):
                self.heading += data
            else:
                self.texts[self.heading] = self.texts.get(self.heading, "") + data

    reader = Reader()
    reader.feed(mediawiki.rendered_html(title))
    return reader.texts


def test_a_reply_goes_above_an_element_someone_left_open_under_the_question_and_shows(forum, mediawiki):
    page = PAGE.replace("\n== Later ==", "\n" + HIDDEN_NOTE + "== Later ==")
    mediawiki.edit_as_human(forum.title, page)
    assert forum.post_reply(key_of(page, "Euler's advisors"), REPLY, "reply").status == "posted"
    text = mediawiki.page_text(forum.title)
    assert text.index("Answered by a bot.") < text.index('<div style="display:none">')
    assert "Answered by a bot." in rendered_under(mediawiki, forum.title)["Euler's advisors"]
    # The hidden section's reply could only go inside the hidden element: MediaWiki's check refuses it.
    with pytest.raises(EditRefused, match=r"hidden from readers \(inside <div style=\"display:none\">\)"):
        forum.post_reply(key_of(text, "Hidden note"), REPLY, "reply")
    assert mediawiki.page_text(forum.title) == text


@pytest.mark.parametrize("wrapper, reason", [
    ('<div style="display: none">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="visibility:hidden">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="font-size:0">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="position:absolute;left:-9999px">\n{reply}\n</div>', "hidden from readers"),
    ('<div class="mw-collapsible mw-collapsed">Details\n{reply}\n</div>', "hidden from readers"),
    ('<div style="font-size:0.01px">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="opacity:0.02">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="height:1px;overflow:hidden">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="margin-top:-9999px">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="line-height:0.01;font-size:1%">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="color:rgba(0,0,0,0)">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="position:relative;top:-5000px">\n{reply}\n</div>', "hidden from readers"),
    ('<div style="font-\\73 ize:0.2px">\n{reply}\n</div>', "hidden from readers"),
    ("<includeonly>\n{reply}\n</includeonly>", "would not render"),
    ("<!-- -->== Elsewhere ==\n{reply}", "under another heading"),
    ("<h2>Elsewhere</h2>\n{reply}", "under another heading"),
])
def test_mediawiki_refuses_a_reply_a_reader_would_not_see_in_the_askers_section(forum, mediawiki, site, wrapper,
                                                                                reason):
    from bot.edit_check import checked_text, measure_allowance

    before, after = wrapper.split("{reply}")
    old = PAGE.replace("\n== Later ==", "\n" + before + "PLACE" + after + "\n== Later ==")
    point = old.index("PLACE") - 1  # the reply goes on a line of its own, after the newline there
    old = old.replace("\nPLACE", "")
    mediawiki.edit_as_human(forum.title, old)
    base = mediawiki.revisions(forum.title)[0]["revid"]
    with pytest.raises(EditRefused, match=reason):
        checked_text(site, forum.title, old, base, point, ":Answered by a bot. ~~~~",
                     measure_allowance(site, forum.title), section_start=old.index("== Euler"))
    # The same reply right after the question is accepted.
    question = old.index("(UTC)", old.index("== Euler")) + len("(UTC)")
    assert checked_text(site, forum.title, old, base, question, ":Answered by a bot. ~~~~",
                        measure_allowance(site, forum.title), section_start=old.index("== Euler")).reply


def test_a_reply_to_a_question_merged_as_a_subsection_must_show_under_that_subsection(forum, mediawiki, site):
    """A question merged into an older thread under a subheading: the reply must read as under its subheading, not
    merely under the older thread's heading (below another subsection of the same thread, it answers nothing)."""
    from bot.edit_check import checked_text, measure_allowance

    merged = QUESTION.replace("== Euler's advisors ==", "=== Euler's advisors ===")
    other = "=== Gauss ===\nAnd Gauss? [[User:Alice|Alice]] ([[User talk:Alice|talk]]) 12:02, 20 November 2026 (UTC)\n"
    old = PAGE.replace(QUESTION, "== Older ==\nAn older question. [[User:Alice|Alice]] ([[User talk:Alice|talk]]) "
                       "11:00, 20 November 2026 (UTC)\n\n" + merged + "\n" + other)
    mediawiki.edit_as_human(forum.title, old)
    base = mediawiki.revisions(forum.title)[0]["revid"]
    start = old.index("=== Euler")
    question = old.index("(UTC)", start) + len("(UTC)")
    below_gauss = old.index("(UTC)", old.index("=== Gauss")) + len("(UTC)")
    with pytest.raises(EditRefused, match="under another heading"):
        checked_text(site, forum.title, old, base, below_gauss, ":Answered by a bot. ~~~~",
                     measure_allowance(site, forum.title), section_start=start, answers=question)
    assert checked_text(site, forum.title, old, base, question, ":Answered by a bot. ~~~~",
                        measure_allowance(site, forum.title), section_start=start, answers=question).reply


OVERLAY = ('<div style="position:fixed;top:0;left:0;width:100%;height:100%;z-index:99;background:#fff">'
           'Douglas Adams died in 2020.</div>')


@pytest.mark.parametrize("inside, reason", [
    (OVERLAY, r"position:fixed"),
    ('<span style="position:absolute;top:-30em">Moved up</span>', "position:absolute"),
    ('<span style="position:relative;top:-3em">Over the question</span>', "position:relative"),
    ('<div style="margin-top:-4em">Over the question</div>', "margin-top:-4em"),
    ('<div style="margin:-1px 0 0 0">Slightly up</div>', "margin:-1px 0 0 0"),
    ('<div style="transform:translateY(-200px)">Up</div>', "transform"),
    ('<div style="float:right;height:900px">A tall float</div>', "float:right"),
    ('<div style="width:100vw">As wide as the window</div>', "width:100vw"),
    ('<span style="display:none">Hidden words</span>', "display:none"),
    ('<span style="font-size:0.01px">Tiny words</span>', "font-size:0.01px"),
    ('<span style="opacity:0.02">Faint words</span>', "opacity:0.02"),
    ('<div style="height:1px;overflow:hidden">Cut words</div>', "height:1px"),
    ('<span class="mw-indicators">In the page header</span>', 'class="mw-indicators"'),
    ('<div class="floatright">Floated by the skin</div>', 'class="floatright"'),
    ('\n<div style="border:1px solid red">Left open', "leaves elements open"),
])
def test_no_element_of_a_reply_may_render_outside_it_or_over_other_text(forum, mediawiki, site, inside, reason):
    """An approved draft or the bot's own reply: every element it renders is judged, not only the signature's
    ancestors."""
    from bot.edit_check import checked_text, measure_allowance
    from bot.reply_sample import sample_reply

    mediawiki.edit_as_human(forum.title, PAGE)
    base = mediawiki.revisions(forum.title)[0]["revid"]
    question = PAGE.index("(UTC)", PAGE.index("== Euler")) + len("(UTC)")
    allowance = measure_allowance(site, forum.title)
    with pytest.raises(EditRefused, match=re.escape(reason) if "(" not in reason else reason):
        checked_text(site, forum.title, PAGE, base, question, f":Answered by a bot. {inside} ~~~~", allowance,
                     section_start=PAGE.index("== Euler"))
    # The bot's own reply, with its query, table and collapsed steps, stays in its box.
    own = sample_reply()
    assert checked_text(site, forum.title, PAGE, base, question, own, allowance,
                        section_start=PAGE.index("== Euler")).reply


@pytest.mark.parametrize("heading, linked", [
    ("Films &#91;1984&#93; of {{Q|Q1}}, <i>in italics</i> &amp; <nowiki/>more", True),
    ("&#91;&#91;User:Admin&#93;&#93; [[Category:Spam]] {{Q|Q1}} <i>x</i> \u202eevil", False),
])
def test_the_summary_links_the_section_as_mediawiki_anchors_it_and_links_nothing_else(forum, mediawiki, heading,
                                                                                     linked):
    from urllib.parse import unquote

    from bot.forum import parse_sections as sections_of_page
    from bot.forum import summary_section
    from bot.render import edit_summary

    page = PAGE.replace("== Later ==", f"== {heading} ==")
    mediawiki.edit_as_human(forum.title, page)
    text, revision = forum.read()
    section = sections_of_page(text, reading=forum.reading(text, revision))[1]
    summary = edit_summary(summary_section(section), "question", "query")
    assert not any(syntax in summary for syntax in ("[[", "]]", "{{", "~~~", "\u202e"))
    outcome = forum.post_reply(section.key, REPLY, summary)
    assert outcome.status == "posted"
    shown = mediawiki.api(action="query", prop="revisions", revids=str(outcome.revision),
                          rvprop="parsedcomment")["query"]["pages"][0]["revisions"][0]["parsedcomment"]
    links = re.findall(r'<a href="([^"]*)"', shown)
    assert len(links) == 1 and "#" in links[0], shown  # the section link only: no user, category or page link
    if linked:
        [anchor] = [item["anchor"] for item in mediawiki.api(action="parse", page=forum.title, prop="sections")[
            "parse"]["sections"] if item["index"] == "2"]
        assert unquote(html.unescape(links[0].split("#", 1)[1])) == anchor, shown


def test_a_page_whose_content_model_is_not_wikitext_is_refused(forum, mediawiki):
    human = mediawiki.human()
    token = human.call(action="query", meta="tokens")["query"]["tokens"]["csrftoken"]
    done = human.call(post=True, action="edit", title=forum.title, text=PAGE, contentmodel="text", token=token)
    assert done["edit"]["contentmodel"] == "text", done
    with pytest.raises(EditRefused, match="content model of .* is text, not wikitext"):
        forum.post_reply(key_of(PAGE, "Euler's advisors"), REPLY, "reply")


def test_opt_outs_in_hostile_text_are_read_as_pywikibot_reads_them(site):
    forum = ForumPage(site, "Wikidata:Request a query", "User:{username}/Stop")
    hostile = "{{a|" * 20_000 + "<!-- " * 5_000 + "<nowiki>" * 5_000
    assert forum.refusal(hostile) is None
    assert forum.refusal(hostile + "{{nobots}}") == "the page opts out of bots"
    assert forum.refusal("{{foo|x={{Nobots}}}}" + hostile) == "the page opts out of bots"
    assert forum.refusal("<nowiki>{{nobots}}</nowiki>" + hostile) is None
    assert forum.refusal("{{bots|deny=" + "x," * 2000 + "}}") == "the page opts out of bots"


def test_the_test_wiki_server_leaves_no_process_behind(mediawiki):
    import socket
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = PhpServer.start(port, mediawiki.config_file, mediawiki.directory / "second-server.log")
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api.php?action=query&format=json", timeout=5).read()
            break
        except OSError:
            assert time.monotonic() < deadline, "the second php -S did not start"
            time.sleep(0.2)
    assert len(group_members(server.group)) > 1  # the server and its forked workers
    server.stop()
    assert group_members(server.group) == []
    assert port != PORT


def test_the_wiki_highlights_sparql_as_a_fresh_debian_pygmentize_does_with_its_server_or_without(mediawiki, tmp_path):
    import secrets
    import subprocess

    from tests.support.pygmentize import CLIENT

    query = (f"# {secrets.token_hex(6)} «never highlighted before»\nSELECT ?item ?itemLabel WHERE {{ ?item wdt:P31 "
             f"wd:Q5 ; rdfs:label \"Ada\"@en . FILTER(?x > 3) }} LIMIT 10")
    options = ["-l", "sparql", "-f", "html", "-O", "cssclass=mw-highlight,encoding=utf-8", "query.rq"]
    (tmp_path / "query.rq").write_text(query)
    fresh = subprocess.run(["/usr/bin/python3", "-c", "import sys; from pygments.cmdline import main; "
                            "sys.exit(main(sys.argv))", *options], cwd=tmp_path, capture_output=True, timeout=60)
    assert fresh.returncode == 0, fresh.stderr
    pre = re.compile(r"<pre>.*?</pre>", re.DOTALL)
    expected = pre.search(fresh.stdout.decode()).group()
    assert '<span class="k">SELECT</span>' in expected
    rendered = mediawiki.render(f'<syntaxhighlight lang="sparql">{query}</syntaxhighlight>')
    assert pre.search(rendered).group() == expected
    alone = tmp_path / "pygmentize"  # the client with no server to reach: Pygments in its own process
    alone.write_text(CLIENT.format(socket=str(tmp_path / "no-server.sock")))
    alone.chmod(0o755)
    done = subprocess.run([str(alone), *options], cwd=tmp_path, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout) == (0, fresh.stdout)


def test_without_a_wiki_the_tests_skip_saying_why_except_in_ci(monkeypatch):
    from tests.support.mediawiki import _unavailable

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no real MediaWiki for these tests: not Debian"):
        _unavailable("not Debian")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="MediaWiki is required in CI: not Debian"):
        _unavailable("not Debian")
