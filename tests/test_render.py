"""The reply's wikitext: what it shows, its size cap, and hostile text made inert."""

import re

import mwparserfromhell
import pytest

from agent.trace import AgentResult, Step, Usage
from bot.forum import Request
from bot.render import render_reply
from bot.wikitext import safe_sparql, sparql_template

HOSTILE = ("}} {{ [[Category:Spam]] ~~~~ ~~~~~ <script>alert(1)</script> __NOTOC__ \n== heading ==\n"
           "</syntaxhighlight> </div> </pre> <nowiki> </nowiki> {| ---- * # : ; ISBN 978-3-16-148410-0 "
           "https://spam.example/ '''bold''' <ref>x</ref> {{subst:foo}} [https://spam.example link]")
QUERY = 'SELECT ?x ?xLabel WHERE { ?x wdt:P31 wd:Q5 ; rdfs:label "' + HOSTILE.replace("\n", " ") + \
    '"@en . FILTER(?x != <ref>) } # ~~~~ [[Category:Spam]]'


def result(thought=HOSTILE, label=HOSTILE, final=QUERY, answer=True) -> AgentResult:
    rows = [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"},
             "xLabel": {"type": "literal", "value": label, "xml:lang": "en"}}] * 7
    steps = [Step(thought, "search_wikidata", HOSTILE, f"{label} (Q42): {HOSTILE}"),
             Step(thought, "execute_sparql", final, f"x\txLabel\nQ42\t{label}"),
             Step(thought, "stop", "", None)]
    return AgentResult("q", final if answer else None, rows if answer else None, ["x", "xLabel"], steps,
                       "stop" if answer else "action_limit", HOSTILE, Usage(llm_calls=3))


PROTECTED = ("nowiki", "pre", "syntaxhighlight")


def outside_protection(wikitext: str) -> mwparserfromhell.wikicode.Wikicode:
    """What MediaWiki would parse: the contents of nowiki, pre and syntaxhighlight are never parsed, and the
    {{SPARQL}} query only reaches syntaxhighlight and a URL (its own test checks it)."""
    code = mwparserfromhell.parse(wikitext)
    for tag in code.filter_tags(recursive=True):
        if str(tag.tag).lower() in PROTECTED and tag.contents is not None:
            tag.contents = ""
    for template in code.filter_templates(recursive=True):
        if str(template.name).strip() == "SPARQL":
            template.add("query", "QUERY")
    return code


def active_markup(wikitext: str) -> dict:
    code = outside_protection(wikitext)
    return {
        "templates": sorted({str(t.name).strip() for t in code.ifilter_templates(recursive=True)}),
        "links": [str(link) for link in code.ifilter_wikilinks(recursive=True)],
        "external": [str(link) for link in code.ifilter_external_links(recursive=True)],
        "headings": [str(h) for h in code.ifilter_headings(recursive=True)],
        "tags": sorted({str(tag.tag).lower() for tag in code.ifilter_tags(recursive=True)}),
    }


@pytest.mark.parametrize("answer", [True, False])
def test_hostile_text_everywhere_renders_inert(answer):
    reply = render_reply(result(answer=answer), Request("h", HOSTILE))
    markup = active_markup(reply)
    assert set(markup["templates"]) <= {"SPARQL", "!", "Q"}
    assert markup["links"] == [] and markup["headings"] == []
    assert markup["external"] == []
    # dd and table markup are the reply's own indentation and preview table, b and i its own emphasis
    assert set(markup["tags"]) <= {"nowiki", "pre", "syntaxhighlight", "div", "small", "code", "br", "dd",
                                   "table", "tr", "th", "td", "b", "i"}
    parsed = str(outside_protection(reply))
    assert parsed.count("~~~") == 1 and reply.endswith(" ~~~~") and "~~~" not in reply[:-4]
    assert "<script" not in parsed and "__NOTOC__" not in parsed
    assert not re.search(r"^=", parsed, re.MULTILINE)
    # nothing closes a protective tag early: each nowiki/pre/syntaxhighlight holds no other tag
    for tag in mwparserfromhell.parse(reply).ifilter_tags(recursive=True):
        if str(tag.tag) in ("nowiki", "pre"):
            assert "<" not in str(tag.contents)
        if str(tag.tag) == "syntaxhighlight":
            assert "</" not in str(tag.contents) and "<" + "\\u002F" not in str(tag.contents).lower()


def test_the_query_template_carries_an_equivalent_query_and_nothing_else():
    template = sparql_template(QUERY)
    code = mwparserfromhell.parse(template)
    [sparql] = [t for t in code.filter_templates(recursive=False)]
    value = str(sparql.get("query").value).replace("{{!}}", "|").strip()
    assert value.replace(" | ", "|") == safe_sparql(QUERY).replace(" | ", "|")
    assert "Category" in value and "[[" not in value and "~~~" not in value and "}}" not in value
    assert "#" not in safe_sparql("SELECT ?x WHERE { ?x ?p ?o } # a comment")


def test_a_reply_shows_the_query_rows_and_trace_and_a_signature():
    reply = render_reply(result(thought="Look up the answer", label="Douglas Adams",
                                final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"), Request("h", "q"))
    assert reply.startswith(":Here is a query that should answer this (7 results):")
    assert "{{SPARQL|query=SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }\n}}" in reply
    assert "{{Q|Q42}}" in reply and "2 more rows" in reply
    assert 'class="mw-collapsible mw-collapsed"' in reply and "Look up the answer" in reply
    assert '<syntaxhighlight lang="sparql">' in reply
    assert reply.rstrip().endswith("~~~~")


def test_without_a_query_the_reply_says_so():
    reply = render_reply(result(thought="t", label="l", answer=False), Request("h", "q"))
    assert reply.startswith(":I could not find a query that answers this")
    assert "{{SPARQL" not in reply and "Steps taken" in reply


def test_the_reply_is_capped_trace_first():
    long = result(thought="x" * 3000, label="y" * 3000, final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }")
    long.steps = long.steps * 10
    reply = render_reply(long, Request("h", "q"), max_chars=12000)
    assert len(reply) <= 12000
    assert "{{SPARQL|query=" in reply and reply.rstrip().endswith("~~~~")
    assert "earlier steps left out" in reply
