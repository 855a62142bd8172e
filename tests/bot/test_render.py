"""The reply's wikitext: what it says and shows, its size cap, and hostile text made inert.

The unit tests read the reply with mwparserfromhell; the live ones save it on
the real MediaWiki and read what the wiki stored and rendered, since only the
wiki's parser is the judge of what a reply does on a page.
"""

from __future__ import annotations

import html
import json
import re
import urllib.parse
from html.parser import HTMLParser

import mwparserfromhell
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.trace import AgentResult, Step, Usage
from agent.messages import MESSAGES, PLURAL_FORMS, PLURAL_RULES, counted
from agent.query_service import QUERY_SERVICE
from bot.render import (
    MIN_CHARS, Credit, EarlierRequest, Markup, edit_summary, final_query_wikitext, preview_table, render_reply,
)
from bot.wikitext import BLOCK_LINE_BREAK, encode, fits_sparql_template, text_block
from tests.bot.test_gold_queries_render import CHUNK, HREF, parse

STRIP_MARKER = "\x7f'\"`UNIQ--nowiki-00000000-QINU`\"'\x7f"
HOSTILE = ("}} {{ [[Category:Spam]] ~~~~ ~~~~~ <script>alert(1)</script> __NOTOC__ \n== heading ==\n"
           "</syntaxhighlight > </div > </pre > <nowiki> </nowiki> </nowiki > </NoWiki\t> &lt;/nowiki&gt; "
           "{| ---- * # : ; "
           "ISBN 978-3-16-148410-0 "
           "https://spam.example/ '''bold''' <ref>x</ref> {{subst:foo}} [https://spam.example link] <!-- "
           + STRIP_MARKER + " [[User:Alice]] \n#MeToo\n*NSYNC\n:indent\n;term\n -{zh}- \ud800 \u202e")
QUERY = 'SELECT ?x ?xLabel WHERE { ?x wdt:P31 wd:Q5 ; rdfs:label "' + HOSTILE.replace("\n", " ") + \
    '"@en . FILTER(?x != <ref>) } # ~~~~ [[Category:Spam]]'
ALLOWED_TAGS = {"div", "br", "small", "table", "tr", "th", "td"}
#: The code blocks of a reply (the steps, a query the template cannot hold): one line each.
CODE_BLOCK = re.compile(r'<div class="mw-code">(.*?)</div>', re.DOTALL)


def rows(label: str, count: int = 7) -> list[dict]:
    return [{"x": {"type": "uri", "value": "http://www.wikidata.org/entity/Q42"},
             "xLabel": {"type": "literal", "value": label, "xml:lang": "en"}}] * count


def result(thought=HOSTILE, label=HOSTILE, final=QUERY, answer=True, **fields) -> AgentResult:
    steps = [Step(thought, "search_wikidata", HOSTILE, f"{label} (Q42): {HOSTILE}"),
             Step(thought, "execute_sparql", HOSTILE, f"x\txLabel\nQ42\t{label}"),
             Step(thought, "execute_sparql", final, f"x\txLabel\nQ42\t{label}"),
             Step(thought, "stop", "", None)]
    return AgentResult("q", final if answer else None, rows(label) if answer else None, ["x", "xLabel"], steps,
                       "stop" if answer else "action_limit", HOSTILE, Usage(llm_calls=4), **fields)


def active_markup(wikitext: str) -> dict:
    """What mwparserfromhell finds in a reply, the {{SPARQL}} query left out (the wiki test checks it)."""
    code = mwparserfromhell.parse(wikitext)
    for template in code.filter_templates(recursive=False):
        if str(template.name).strip() == "SPARQL":
            template.add("query", "QUERY")
    return {
        "templates": {str(t.name).strip() for t in code.ifilter_templates(recursive=True)},
        "links": [str(link) for link in code.ifilter_wikilinks(recursive=True)],
        "external": [str(link.url) for link in code.ifilter_external_links(recursive=True)],
        "headings": [str(h) for h in code.ifilter_headings(recursive=True)],
        "comments": [str(c) for c in code.ifilter_comments(recursive=True)],
        "tags": {str(tag.tag).lower() for tag in code.ifilter_tags(recursive=True) if not tag.wiki_markup}
        | {"table" for tag in code.ifilter_tags(recursive=True) if tag.wiki_markup},
        "text": str(code),
    }


def outside_blocks(wikitext: str) -> str:
    """The reply without the contents of its code blocks."""
    return CODE_BLOCK.sub('<div class="mw-code"></div>', wikitext)


def with_hostile_rows(run: AgentResult) -> AgentResult:
    """*run* with its queries' steps keeping hostile rows, as the agent keeps them: texts in two languages (one of
    them hostile too), so that the steps name them."""
    for step in run.steps:
        if step.action == "execute_sparql":
            step.variables, step.query_status, step.row_count = ["x", "xLabel", HOSTILE], "ok", 2
            step.rows = [{**row, "xLabel": {**row["xLabel"], "xml:lang": language}, HOSTILE: row["xLabel"]}
                         for row, language in zip(rows(HOSTILE, 2), ("en", HOSTILE))]
    return run


@pytest.mark.parametrize("kept", [False, True], ids=["observations", "kept-rows"])
@pytest.mark.parametrize("answer", [True, False])
def test_hostile_text_everywhere_renders_inert(answer, kept):
    run = result(answer=answer, explanation=HOSTILE)
    reply = render_reply(with_hostile_rows(run) if kept else run)
    markup = active_markup(reply)
    assert markup["templates"] <= {"SPARQL", "!", "Q"}
    assert markup["links"] == []  # the documentation is the bot's user page, which the signature links
    assert markup["headings"] == [] and markup["comments"] == []
    assert all(url.startswith(QUERY_SERVICE) for url in markup["external"])
    assert markup["tags"] <= ALLOWED_TAGS
    # no extension tag whose strip marker a look-alike on the page could take; no control character gets through
    assert CODE_BLOCK.search(reply) and "<nowiki" not in reply.lower()
    assert "\x7f" not in reply and "\ud800" not in reply and "\u202e" not in reply
    outside = outside_blocks(reply)
    assert outside.count("~~~") == 1 and reply.endswith(" ~~~~")
    assert "__NOTOC__" not in outside and "ISBN 978" not in outside and "://spam" not in outside
    # every line is the thread's indentation or a table's, or lies inside a block or the query template
    outside = re.sub(r"\{\{SPARQL\|query=.*?\n\}\}", "{{SPARQL}}", outside, flags=re.DOTALL)
    assert all(line.startswith((":", "|", "!")) for line in outside.splitlines()), outside


def test_encode_escapes_only_what_mediawiki_reads_as_markup_there():
    assert encode("1984-01-01T00:00:00Z") == "1984-01-01T00:00:00Z"
    assert encode("Greystoke: The Legend of Tarzan (35 results):") == "Greystoke: The Legend of Tarzan (35 results):"
    assert encode("a = b; c * d # e! f - g") == "a = b; c * d # e! f - g"
    assert encode("x {{t}} [[l]] [https://x.org y] ~~~~ ''b'' __NOTOC__ <b> &amp; a|b") == (
        "x &#123;&#123;t&#125;&#125; &#91;&#91;l]] &#91;https&#58;//x.org y] ~~&#126;~ '&#39;b'&#39; "
        "_&#95;NOTOC_&#95; &lt;b> &amp;amp; a|b")
    assert encode("a|b", cell=True) == "a&#124;b" and encode("-{zh}-") == "-&#123;zh&#125;-"
    assert encode(":indent") == "&#58;indent" and encode("ISBN 12") == "&#73;SBN 12"
    assert encode("a < b & c") == "a < b & c" and encode("a\nb") == "a<br>b"
    assert encode("\x00\x7f\u202ea\r\nb") == "a<br>b" and encode("e\u0301") == "\u00e9"  # NFC, as MediaWiki
    assert encode("\u0338x") == "&#824;x"  # a combining mark cannot join the markup before it


def test_a_text_block_shows_the_text_as_written_on_one_line_with_no_extension_tag():
    text = "SELECT * { ?x ?p \"</nowiki >\" } # &lt; <!-- ~~~~ [[Category:X]]\n  indented\n:list\n== h =="
    block = text_block(text)
    [inner] = CODE_BLOCK.fullmatch(block).groups()
    assert "<!" not in inner and "<nowiki" not in inner and "~~~" not in inner
    # every line break of the source lies inside a <br> tag: no line of the block starts a line of wikitext
    assert all(line.startswith(">") for line in block.splitlines()[1:]) and block.count("\n") == 3
    assert html.unescape(inner.replace("<br\n>", "\n")) == text  # each line as written
    assert text_block("a\n\u0338b") == '<div class="mw-code">a<br\n>&#824;b</div>'  # the mark cannot join >
    assert text_block("wd:Q5 ;\n(! ?b) « c »") == '<div class="mw-code">wd:Q5&#32;;<br\n>(! ?b) «&#32;c&#32;»</div>'


def test_a_magic_link_word_is_spelt_after_any_character_but_an_ascii_letter_or_digit():
    assert all("&#73;SBN 12" in encode(f"{before}ISBN 12") for before in ("", "_", "__", "é", "~", "-"))
    assert "&#82;FC" in encode("x_RFC 12") and "&#80;MID" in encode("_PMID 12") and "aISBN" in encode("aISBN 1")


def test_a_reply_leads_with_words_then_the_query_rows_rest_trace_and_a_signature():
    reply = render_reply(result(thought="Look up the answer", label="Douglas Adams",
                                final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }",
                                explanation="The query lists humans (P31 = Q5). It reads every item. Items without "
                                            "a class are left out.\nSome humans lack P31."),
                         credit=Credit("User:SpinachBot/About", "Alice"), addressed=("Bob",))
    lines = reply.splitlines()
    assert lines[0] == (":{{re|1=Bob}} The query lists humans (P31 = Q5). It reads every item. "
                        "The query below finds 7 results, the first 3 in the table.")
    assert lines[1] == ":{{SPARQL|query=SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"
    assert reply.count("{{Q|Q42}}") == 3 and "more rows" not in reply.split("<div")[0]
    assert "Douglas Adams" not in reply.split("|}")[0]  # {{Q}} shows the label: no second column of it
    assert "|}\n:Items without a class are left out.\n:Some humans lack P31.\n:<div" in reply
    assert 'class="mw-collapsible mw-collapsed"' in reply and "1. Look up the answer" in reply
    assert lines[-1].startswith(":<small>Written by an automated agent") and lines[-1].endswith(" ~~~~")
    assert "run by [[User talk:Alice|Alice]]" in lines[-1] and "[[User:SpinachBot/About|about this bot]]" in lines[-1]
    assert "please check the query" in lines[-1]


def test_without_an_explanation_the_reply_opens_with_how_many_results():
    reply = render_reply(result(label="l", final="SELECT ?x {}", explanation=""))
    assert reply.splitlines()[0] == ":The query below finds 7 results, the first 3 in the table."
    one = result(label="l", final="SELECT ?x {}", explanation="")
    one.answer = one.answer[:1]
    assert render_reply(one).splitlines()[0] == ":The query below finds 1 result."


def test_the_asker_is_addressed_only_by_a_name_a_user_can_have():
    assert render_reply(result(label="l", final="SELECT ?x {}"), addressed=("A=B",)).startswith(":{{re|1=A=B}} ")
    for names in ((), ("",), ("Bob]] [[Category:X",), ("{{x}}",)):
        assert "{{re" not in render_reply(result(label="l", final="SELECT ?x {}"), addressed=names)
    assert render_reply(result(label="l", final="SELECT ?x {}"), addressed=("Bob",), depth=3).startswith(
        ":::{{re|1=Bob}} ")


def test_the_people_a_reply_answers_are_addressed_each_once_in_order():
    reply = render_reply(result(label="l", final="SELECT ?x {}"), addressed=("Alice", "Bob", "Alice", "{{x}}"))
    assert reply.startswith(":{{re|1=Alice|2=Bob}} ")


def test_a_diagnosis_of_the_askers_draft_leads_the_reply():
    fixed = result(thought="t", label="l", final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }",
                   explanation="Your query used P31 on the wrong side.\nThe fix swaps subject and object.")
    lines = render_reply(fixed).splitlines()
    assert lines[0] == (":Your query used P31 on the wrong side. The query below finds 7 results, the first 3 in the "
                        "table.")
    assert ":The fix swaps subject and object.\n:<div" in "\n".join(lines)


def test_depth_indents_every_line_with_colons():
    reply = render_reply(result(label="l", final="SELECT ?x {}"), depth=3)
    outside = outside_blocks(reply)
    starts = [line for line in outside.splitlines() if not line.startswith(("|", "!", "}}"))]
    assert all(line.startswith(":::") and not line.startswith("::::") for line in starts)
    assert ':::{| class="wikitable"' in reply
    with pytest.raises(ValueError, match="depth"):
        render_reply(result(), depth=0)


def test_without_an_answer_the_reply_says_what_was_tried_and_asks_no_check():
    reply = render_reply(result(thought="t", label="l", answer=False))
    assert reply.splitlines()[0] == ":I could not find a query that answers this."
    assert "I searched Wikidata for “" in reply and "and ran 2 queries, but none returned results." in reply
    assert "{{SPARQL" not in reply and "query.wikidata.org" not in reply and "limit" not in reply
    assert "please check" not in reply and "automated agent" in reply
    explained = render_reply(result(answer=False, explanation="No item links these two; try P50 instead."))
    assert "No item links these two; try P50 instead." in explained and "I searched" not in explained


def test_the_edit_summary_says_what_the_reply_is():
    assert edit_summary("Euler", "question", "query") == (
        "/* Euler */ reply with a SPARQL query written by an automated agent (please check it)")
    assert edit_summary("Euler", "question", "no_query") == "/* Euler */ automated reply: no query found"
    assert edit_summary("Euler", "question", "cannot_answer") == (
        "/* Euler */ automated reply: this cannot be answered from Wikidata")
    for holds in ("query", "no_query", "cannot_answer"):
        assert "follow-up" in edit_summary("Euler", "follow-up", holds)
        assert "answer to a ping" in edit_summary("Euler", "ping", holds)
        assert "follow-up" not in edit_summary("Euler", "ping", holds)
    for kind in ("question", "follow-up", "ping", "too-long"):
        for holds in ("no_query", "cannot_answer"):
            assert "SPARQL query" not in edit_summary("E", kind, holds)


def test_the_plain_form_calls_no_template_and_shows_the_same_rows_and_query():
    """A wiki whose {{Q}} or {{SPARQL}} brings in what MediaWiki's check refuses gets the plain form: items as links
    showing the row's label, the query as a text block and a link, the asker as a link; nothing else changes."""
    run = result(thought="Look up the answer", label="Douglas [[Adams]] | {{x}}",
                 final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }", explanation="The query lists humans.")
    normal = render_reply(run, addressed=("Bob",))
    plain = render_reply(run, addressed=("Bob",), markup=Markup.LINKS)
    assert "{{" in normal and mwparserfromhell.parse(plain).filter_templates() == []
    lines = plain.splitlines()
    assert lines[0] == (":[[User:Bob|Bob]]: The query lists humans. The query below finds 7 results, the first 3 "
                        "in the table.")
    query = "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"
    assert lines[1] == ":" + final_query_wikitext(query, markup=Markup.LINKS)
    assert lines[1].startswith(':<div class="mw-code">') and f"[{QUERY_SERVICE}" in lines[1]
    assert html.unescape(CODE_BLOCK.search(lines[1])[1]) == query
    rows_shown = [line for line in plain.split("|}")[0].splitlines() if line.startswith("| ")]
    assert rows_shown == ["| [[Q42|Douglas &#91;&#91;Adams&#93;&#93; &#124; &#123;&#123;x&#125;&#125;]]"] * 3
    links = [str(link.title) for link in mwparserfromhell.parse(plain).ifilter_wikilinks()]
    assert links.count("Q42") == 3 and "User:Bob" in links
    # the same rows as the normal form, where {{Q|Q42}} shows the label: only the items' markup differs
    assert len(rows_shown) == normal.count("{{Q|Q42}}")
    assert plain.split("|}", 1)[1] == normal.split("|}", 1)[1]
    property_row = [{"x": term("http://www.wikidata.org/entity/P31", kind="uri")}]
    table = preview_table(AgentResult("q", "SELECT ?x {}", property_row, ["x"], [], "stop"), 5, MESSAGES["en"],
                          markup=Markup.LINKS)
    assert table.splitlines()[3] == "| [[Property:P31]]"


def term(value: str, datatype: str = "", kind: str = "literal") -> dict:
    return {"type": kind, "value": value, **({"datatype": datatype} if datatype else {})}


def test_the_preview_shows_an_item_once_dates_coordinates_and_short_headers():
    xsd = "http://www.w3.org/2001/XMLSchema#"
    wkt = "http://www.opengis.net/ont/geosparql#wktLiteral"
    rows = [{"film": term("http://www.wikidata.org/entity/Q639387", kind="uri"),
             "filmLabel": term("The Cotton Club"),
             "publication_date_of_the_first_release": term("1984-12-14T00:00:00Z", xsd + "dateTime"),
             "place": term("Point(86.925277777 27.988055555)", wkt),
             "moon": term("<http://www.wikidata.org/entity/Q405> Point(-23.4 -0.67)", wkt),
             "when": term("2001-03-12T13:45:00Z", xsd + "dateTime"), "count": term("+100", xsd + "decimal")}]
    found = AgentResult("q", "SELECT ?film {}", rows, list(rows[0]), [], "stop")
    table = preview_table(found, 5, MESSAGES["en"]).splitlines()
    assert table[1] == "! film !! publication date of the… !! place !! moon !! when !! count"
    assert table[3] == ("| {{Q|Q639387}} || 1984-12-14 || 27.9881°N 86.9253°E || 0.67°S 23.4°W (Q405) "
                        "|| 2001-03-12 13:45 || 100")
    label_only = AgentResult("q", "SELECT ?filmLabel {}", [{"filmLabel": term("The Cotton Club")}], ["filmLabel"],
                             [], "stop")
    assert preview_table(label_only, 5, MESSAGES["en"]).splitlines()[1:4] == ["! film", "|-", "| The Cotton Club"]


def test_the_reply_names_its_operator_only_with_a_name_that_is_a_user_name():
    with pytest.raises(ValueError, match="cannot be a page or user name"):
        Credit("User:Bot", "Alice]] [[Category:X")
    assert "run by" not in render_reply(result(label="l", final="SELECT ?x {}"), credit=Credit("User:Bot"))


def test_a_query_that_returned_nothing_is_not_presented_as_an_answer():
    empty = result(label="l", final="SELECT ?x {}")
    empty.answer = []
    reply = render_reply(empty)
    assert "I could not find a query" in reply and "{{SPARQL" not in reply


def cannot_answer(language: str = "en",
                  explanation: str = "Wikidata records no favourite food for Euler.") -> AgentResult:
    steps = [Step("look", "search_wikidata", "Euler favourite food", "No entities or properties found."),
             Step("read", "get_wikidata_entry", "Q7604", "Leonhard Euler (Q7604)\n{}"),
             Step("check", "execute_sparql", "SELECT ?f WHERE { wd:Q7604 wdt:P1 ?f }", "empty"),
             Step("", "stop", "", None)]
    return AgentResult("What did Euler like to eat?", None, None, [], steps, "cannot_answer", "the model found the "
                       "question cannot be answered from Wikidata", Usage(llm_calls=4), explanation=explanation,
                       language=language)


def test_a_question_wikidata_cannot_answer_gets_its_reasons_and_what_was_searched():
    reply = render_reply(cannot_answer())
    lines = reply.splitlines()
    assert lines[0] == ":This cannot be answered from Wikidata, as far as I could find."
    assert ("Wikidata records no favourite food for Euler. I searched Wikidata for “Euler favourite food” and "
            "ran 1 query.") in html.unescape(reply)
    assert "{{SPARQL" not in reply and "please check" not in reply and "query.wikidata.org" not in reply
    assert lines[-1] == (":<small>Written by an automated agent with a language model "
                         "(about this bot: its user page).</small> ~~~~")
    german = render_reply(cannot_answer("de", "Dazu hat Wikidata keine Aussage."))
    assert "Diese Frage lässt sich mit Wikidata nicht beantworten" in german and "Ich habe Wikidata nach" in german


def test_a_reply_without_a_query_never_asks_to_check_one():
    for kind in (result(thought="t", label="l", answer=False), cannot_answer()):
        reply = render_reply(kind)
        assert "please check the query" not in reply and "Written by an automated agent" in reply


def test_a_best_effort_query_says_so_and_a_boolean_is_answered_in_words():
    best = render_reply(result(label="l", final="SELECT ?x {}", best_effort=True))
    assert "I did not settle on a query myself" in best and "(7 results, the first 3 in the table)" in best
    ask = result(label="l", final="ASK { wd:Q42 wdt:P31 wd:Q5 }", explanation="")
    ask.answer = True
    assert render_reply(ask).startswith(":The query below answers this: yes.\n")
    ask.answer = False
    assert render_reply(ask).startswith(":The query below answers this: no.\n")


@pytest.mark.parametrize(("language", "lead"), [
    ("de", "Die Abfrage unten liefert 7 Ergebnisse, die ersten 3 in der Tabelle."),
    ("fr-CA", "La requête ci-dessous donne 7 résultats, les 3 premiers dans le tableau."),
    ("es", "La consulta de abajo da 7 resultados, los 3 primeros en la tabla."),
    ("pt", "The query below finds 7 results, the first 3 in the table."),
    ("", "The query below finds 7 results, the first 3 in the table."),
])
def test_the_fixed_wording_follows_the_askers_language(language, lead):
    reply = render_reply(result(label="l", final="SELECT ?x {}", language=language, explanation=""))
    assert reply.splitlines()[0] == ":" + lead


@pytest.mark.parametrize(("language", "footer"), [
    ("en", ":<small>Written by an automated agent with a language model; please check the query (about this bot: its "
           "user page).</small> ~~~~"),
    ("fr", ":<small>Écrit par un agent automatique avec un modèle de langue ; merci de vérifier la requête (à propos "
           "de ce bot : sa page utilisateur).</small> ~~~~"),
])
def test_the_footer_is_punctuated_as_the_askers_language_spaces_it(language, footer):
    assert render_reply(result(label="l", final="SELECT ?x {}", language=language)).splitlines()[-1] == footer


NNBSP = "\u202f"
#: How each language counts results, steps and left-out steps: 0, 1, 2, a large number and a whole number of millions.
PLURALS = {
    "en": (["0 results", "1 result", "2 results", "24,152 results", "1,000,000 results"],
           ["0 steps", "1 step", "2 steps", "24,152 steps", "1,000,000 steps"],
           "(1 earlier step left out to keep the reply short)"),
    "de": (["0 Ergebnisse", "1 Ergebnis", "2 Ergebnisse", "24.152 Ergebnisse", "1.000.000 Ergebnisse"],
           ["0 Schritte", "1 Schritt", "2 Schritte", "24.152 Schritte", "1.000.000 Schritte"],
           "(1 früherer Schritt ausgelassen, damit die Antwort kurz bleibt)"),
    "fr": (["0 résultat", "1 résultat", "2 résultats", f"24{NNBSP}152 résultats",
            f"1{NNBSP}000{NNBSP}000 de résultats"],
           ["0 étape", "1 étape", "2 étapes", f"24{NNBSP}152 étapes", f"1{NNBSP}000{NNBSP}000 d'étapes"],
           "(1 étape antérieure omise pour garder la réponse courte)"),
    "es": (["0 resultados", "1 resultado", "2 resultados", "24.152 resultados", "1.000.000 de resultados"],
           ["0 pasos", "1 paso", "2 pasos", "24.152 pasos", "1.000.000 de pasos"],
           "(1 paso anterior omitido para que la respuesta sea breve)"),
}


@pytest.mark.parametrize("language", sorted(PLURALS))
def test_every_counted_phrase_takes_the_plural_form_its_language_gives_the_number(language):
    results, steps, left_out = PLURALS[language]
    words = MESSAGES[language]
    assert [counted(words, "rows", count) for count in (0, 1, 2, 24_152, 1_000_000)] == results
    assert [counted(words, "steps", count) for count in (0, 1, 2, 24_152, 1_000_000)] == steps
    assert counted(words, "left_out", 1) == left_out


@pytest.mark.parametrize(("language", "one", "many"), [
    ("en", ("The query below finds 1 result.", "What I did (1 step, 1 model call)"),
     ("The query below finds 1,000,000 results, the first 3 in the table.", "What I did (2 steps, 2 model calls)")),
    ("de", ("Die Abfrage unten liefert 1 Ergebnis.", "Vorgehen (1 Schritt, 1 Modellaufruf)"),
     ("Die Abfrage unten liefert 1.000.000 Ergebnisse, die ersten 3 in der Tabelle.",
      "Vorgehen (2 Schritte, 2 Modellaufrufe)")),
    ("fr", ("La requête ci-dessous donne 1 résultat.", "Ma démarche (1 étape, 1 appel au modèle)"),
     (f"La requête ci-dessous donne 1{NNBSP}000{NNBSP}000 de résultats, les 3 premiers dans le tableau.",
      "Ma démarche (2 étapes, 2 appels au modèle)")),
    ("es", ("La consulta de abajo da 1 resultado.", "Cómo busqué (1 paso, 1 llamada al modelo)"),
     ("La consulta de abajo da 1.000.000 de resultados, los 3 primeros en la tabla.",
      "Cómo busqué (2 pasos, 2 llamadas al modelo)")),
])
def test_the_reply_counts_its_results_steps_and_model_calls_in_the_askers_plural_forms(language, one, many):
    final = "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"
    ran = Step("Run it.", "execute_sparql", final, "x\nQ42\n(1 row)", query_status="ok", row_count=1)
    for count, (lead, title) in ((1, one), (1_000_000, many)):
        steps = [ran] * min(count, 2)
        found = AgentResult("q", final, rows("l", count), ["x", "xLabel"], steps, "stop", "",
                            Usage(llm_calls=len(steps)), language=language)
        reply = html.unescape(render_reply(found))
        assert reply.startswith(":" + lead + "\n") and f"\'\'\'{title}\'\'\'" in reply, reply[:300]


def test_every_language_has_every_message_with_the_same_fields_and_every_plural_form_of_its_counted_phrases():
    fields = re.compile(r"\{(\w+)\}")
    counted_phrases = {key.removesuffix("_other") for key in MESSAGES["en"] if key.endswith("_other")}
    plain = MESSAGES["en"].keys() - {f"{key}_{form}" for key in counted_phrases for form in PLURAL_FORMS["en"]}
    for language, table in MESSAGES.items():
        forms = PLURAL_FORMS[language]
        assert {PLURAL_RULES[language](count) for count in (0, 1, 2, 5, 1_000_000, 3_000_000)} == set(forms)
        assert table.keys() == plain | {f"{key}_{form}" for key in counted_phrases for form in forms}, language
        for key, text in table.items():
            english = MESSAGES["en"][key if key in plain else key.rsplit("_", 1)[0] + "_other"]
            assert set(fields.findall(text)) <= set(fields.findall(english)), (language, key)
            assert key.endswith("_one") or set(fields.findall(text)) == set(fields.findall(english)), (language, key)


def test_the_reply_is_capped_trace_first_then_rows():
    long = result(thought="x" * 3000, label="y" * 150, final="SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }")
    long.steps = long.steps * 10
    reply = render_reply(long, max_chars=12000)
    assert len(reply) <= 12000
    assert "{{SPARQL|query=" in reply and "earlier steps left out" in reply and "the first 3 in the table" in reply
    short = render_reply(long, max_chars=MIN_CHARS)
    assert len(short) <= MIN_CHARS and "39 earlier steps left out" in short and "{{SPARQL|query=" in short
    with pytest.raises(ValueError, match="at least"):
        render_reply(long, max_chars=MIN_CHARS - 1)


def test_an_over_long_final_query_or_a_lone_surrogate_still_renders():
    huge = "SELECT ?x WHERE { " + "?x wdt:P31 wd:Q5 . " * 2000 + "}"
    reply = render_reply(result(thought="broken \ud800 thought", label="l", final=huge), max_chars=20000)
    assert len(reply) <= 20000 and f"The query is {len(huge):,} characters long" in reply
    assert reply.endswith(" ~~~~") and "\ud800" not in reply


# The "Try it!" link is the model's query, whatever it holds (issue 8, break 4), and markup in a valid
# query never gets past the template (break 3).
TRY_IT_CASES = [
    'SELECT ?x WHERE { ?x rdfs:label "__NOTOC__" }',
    "SELECT ?a__b WHERE { ?a__b ?p ?o }",
    "PREFIX ex: <http://ex.org/> SELECT * WHERE { ex:a\\~b ?p ?o }",
    'PREFIX ex: <http://ex.org/> SELECT * WHERE { ex:a\\#b ?p "x" }',
    'SELECT * WHERE { ?x ?p "line\u2028break" }',
    'SELECT * WHERE { ?x ?p "next\u0085line" }',
    'SELECT * WHERE { ?x ?p "trailing   " }',
    'SELECT * WHERE { ?x ?p "a  \nb" }',
    'SELECT * WHERE { ?x ?p "bell\x07" }',
    'SELECT * WHERE { ?x ?p "cafe\u0301" }',
    "SELECT *\r\nWHERE { ?x ?p ?o }",
    'SELECT * WHERE { ?x ?p ?o FILTER(?o = "~~~~") }',
    "SELECT * WHERE { { ?x ?p ?o }}",
    'SELECT * WHERE { ?x ?p ?o FILTER(?o || "|}") }',
    '#defaultView:Map\n#title: a map\nSELECT ?x WHERE { ?x ?p "[AUTO_LANGUAGE],en" }',
    "SELECT * WHERE { ?x ?p <!--> }",
    'PREFIX ex: <http://ex.org/> SELECT * WHERE { ?x ex:it\\\'s "<!--" }',
    'PREFIX ex: <http://ex.org/> SELECT * WHERE { ?x ex:a\\#b "<includeonly >" }',
    'SELECT * WHERE { ?x ?p "</syntaxhighlight ></div >" }',
    'SELECT * WHERE { ?x ?p "' + STRIP_MARKER + '" }',
]


def linked_query(wikitext: str) -> str:
    """The query a click on "Try it!" opens, read from the wikitext as MediaWiki would expand it."""
    code = mwparserfromhell.parse(wikitext)
    templates = code.filter_templates(recursive=False)
    if templates:
        [template] = templates
        return str(template.get("query").value).replace("{{!}}", "|").strip()
    [link] = code.filter_external_links()
    return urllib.parse.unquote(str(link.url).removeprefix(QUERY_SERVICE))


def test_try_it_cases_on_the_real_wiki_open_the_exact_query_and_add_nothing(mediawiki):
    page = "".join(f'<div id="gold-{n}">\n{final_query_wikitext(query)}\n</div><div id="end-{n}"></div>\n'
                   for n, query in enumerate(TRY_IT_CASES))
    parsed = parse(mediawiki.api_url, page)
    assert parsed["links"] == [] and parsed["categories"] == [] and parsed["sections"] == []
    assert {item["title"] for item in parsed["templates"]} <= {"Template:SPARQL"}
    assert all(url.startswith(QUERY_SERVICE) for url in parsed["externallinks"])
    assert "<!--" not in parsed["text"] and "\x7f" not in parsed["text"]
    chunks = dict(CHUNK.findall(parsed["text"]))
    assert len(chunks) == len(TRY_IT_CASES)
    for number, chunk in chunks.items():
        [href] = HREF.findall(chunk)
        assert urllib.parse.unquote(html.unescape(href).removeprefix(QUERY_SERVICE)) == TRY_IT_CASES[int(number)]


@pytest.mark.parametrize("query", TRY_IT_CASES)
def test_try_it_opens_the_models_exact_query(query):
    wikitext = final_query_wikitext(query)
    assert linked_query(wikitext) == query
    assert fits_sparql_template(query) == wikitext.startswith("{{SPARQL|query=")


def test_common_queries_keep_the_template_and_their_text():
    query = '#defaultView:Map\nSELECT ?x WHERE { ?x wdt:P625 ?c . FILTER(?a || ?b) SERVICE wikibase:label ' \
            '{ bd:serviceParam wikibase:language "[AUTO_LANGUAGE],en". } }'
    assert final_query_wikitext(query) == "{{SPARQL|query=" + query.replace("|", "{{!}}") + "\n}}"


SPARQL_SHAPED = st.lists(st.sampled_from([
    "SELECT", " ", "\n", "?x", "{", "}", "[", "]", "|", "||", "<", ">", "<ref>", "</pre >", "<!--", "-->",
    '"', "'", '"""', "#", "~", "~~~", "_", "__", "__NOTOC__", "=", "\n=", ":", "*", ";", "!", "&", "&amp;",
    "&#124;", "ex:a\\'b", "\\", "{{!}}", "[[", "]]", "{{", "}}", "\x7f", "UNIQ--nowiki-00000000-QINU", "\t",
    "\r", "\u2028", "é", "e\u0301", "%41", "http://x/", "[AUTO_LANGUAGE]", "-{", "}-", "ISBN 1", "''",
]) | st.text(max_size=3), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(SPARQL_SHAPED)
def test_any_query_is_linked_exactly_and_brings_no_markup(query):
    wikitext = final_query_wikitext(query)
    assert linked_query(wikitext) == query.strip(" \t\r\n")
    code = mwparserfromhell.parse(wikitext)
    assert code.filter_wikilinks() == [] and code.filter_comments() == [] and "~~~" not in outside_blocks(wikitext)
    if wikitext.startswith("{{SPARQL|query="):
        [template] = code.filter_templates(recursive=False)
        assert str(template) == wikitext
        assert {str(t.name) for t in code.filter_templates()} <= {"SPARQL", "!"}
        # bold, italics, lists and URLs inside the argument are plain text to the preprocessor: the query only
        # reaches syntaxhighlight and a percent-encoded URL (the gold-query test checks that on the wiki)
        assert [tag for tag in code.filter_tags() if not tag.wiki_markup] == []
    else:
        assert code.filter_templates() == []
        assert {str(tag.tag) for tag in code.filter_tags()} <= {"div", "br"}
        assert len(code.filter_external_links()) == 1


# Live: the wiki's own parser and storage.

class Collapsible(HTMLParser):
    """The text inside the reply's collapsible element, and the text after it closes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # div nesting inside the collapsible element; 0 when outside
        self.inside: list[str] = []
        self.after: list[str] = []
        self.closed = False

    def handle_starttag(self, tag, attrs):
        if tag != "div":
            return
        if self.depth:
            self.depth += 1
        elif "mw-collapsible" in (dict(attrs).get("class") or "").split():
            self.depth = 1

    def handle_endtag(self, tag):
        if tag == "div" and self.depth:
            self.depth -= 1
            self.closed = self.closed or self.depth == 0

    def handle_data(self, data):
        if self.depth:
            self.inside.append(data)
        elif self.closed:
            self.after.append(data)


def save_and_read(mediawiki, title: str, text: str) -> tuple[str, dict]:
    """Save *text* as a page and return what the wiki stored and its parse."""
    mediawiki.edit_as_human(title, text)
    parsed = mediawiki.api(action="parse", page=title, disablelimitreport="1",
                           prop="text|links|templates|externallinks|categories|sections|properties")["parse"]
    return mediawiki.page_text(title), parsed


def squash(text: str) -> str:
    return " ".join(text.split())


def test_a_hostile_reply_saved_on_the_real_wiki_stays_inert_and_collapsed(mediawiki):
    hostile = result(explanation=HOSTILE, final="SELECT ?x WHERE { ?x ?p ?o }")
    hostile.steps = [Step(f"step {n}: {HOSTILE}", "execute_sparql", HOSTILE, f"row\n{HOSTILE}") for n in range(6)]
    reply = render_reply(with_hostile_rows(hostile))
    page = "== Question ==\nWhat? [[User:Alice|Alice]] 10:00, 1 January 2026 (UTC)\n" + reply
    stored, parsed = save_and_read(mediawiki, "Render hostile", page)
    assert stored.startswith(page[:-len("~~~~")]) and "\x7f" not in stored
    assert "~~~" not in outside_blocks(stored) and stored.endswith("(UTC)")
    assert [section["line"] for section in parsed["sections"]] == ["Question"]
    assert parsed["categories"] == [] and parsed["properties"] in ([], {})
    assert {link["title"] for link in parsed["links"]} <= {"User:Alice", "User talk:Alice"}
    assert {t["title"] for t in parsed["templates"]} <= {"Template:SPARQL", "Template:Q"}
    assert all(url.startswith(QUERY_SERVICE) for url in parsed["externallinks"])
    rendered = parsed["text"]
    assert "<script" not in rendered and rendered.count("<h2") == 1 and "UNIQ" in rendered
    reader = Collapsible()
    reader.feed(rendered)
    inside = squash("".join(reader.inside))
    for number in range(6):
        assert f"step {number}: }}}} {{{{ [[Category:Spam]]" in inside
    assert "#MeToo *NSYNC :indent ;term" in inside
    assert squash("".join(reader.after)).startswith("Written by an automated agent")


def test_a_cannot_answer_reply_reads_as_such_on_the_real_wiki(mediawiki):
    page = ("== Euler's food ==\nWhat? [[User:Alice|Alice]] 10:00, 1 January 2026 (UTC)\n"
            + render_reply(cannot_answer()))
    _, parsed = save_and_read(mediawiki, "Render cannot answer", page)
    rendered = squash(html.unescape(re.sub(r"<[^>]+>", " ", parsed["text"])))
    assert "This cannot be answered from Wikidata, as far as I could find." in rendered
    assert "Wikidata records no favourite food for Euler. I searched Wikidata for “Euler favourite food” and ran " \
           "1 query." in rendered
    assert "please check" not in rendered and parsed["externallinks"] == []
    assert {t["title"] for t in parsed["templates"]} == set()


def test_a_long_replayed_trace_stays_inside_its_collapsed_block(mediawiki, shared_dir):
    from harness.replay import replay

    runs = json.loads((shared_dir / "reference-outputs" / "qald10_spinach_traces_test.log").read_text())
    run = max(runs, key=lambda run: (len(run.get("actions") or []),
                                     sum(len(action.get("observation") or "") for action in run["actions"] or [])))
    outcome = replay(run).result
    assert len(outcome.steps) >= 10
    reply = render_reply(outcome)
    _, parsed = save_and_read(mediawiki, "Render replayed trace", "== Q ==\n" + reply)
    reader = Collapsible()
    reader.feed(parsed["text"])
    inside, after = squash("".join(reader.inside)), squash("".join(reader.after))
    for step in outcome.steps:
        assert squash(step.thought)[:60] in inside
    assert after.startswith("Written by an automated agent") and len(after) < 300
    assert [section["line"] for section in parsed["sections"]] == ["Q"]


def test_an_earlier_request_is_linked_to_its_section_of_the_archive_on_the_real_wiki(mediawiki):
    from bot.forum import parse_sections

    archive = "Wikidata:Request a query/Render link/Archive/2019/11"
    heading = 'Items with "quotes", 100% & [brackets] ~ <b>bold</b> co_2 : 1'
    mediawiki.edit_as_human(archive, f"== Earlier ==\nFirst.\n\n== {heading} ==\nThe request. [[User:Alice|Alice]] "
                                     "10:00, 4 November 2019 (UTC)\n")
    [anchor] = [section["anchor"] for section in mediawiki.api(action="parse", page=archive, prop="sections")[
        "parse"]["sections"] if section["index"] == "2"]
    section = parse_sections(mediawiki.page_text(archive))[1]
    earlier = EarlierRequest(f"{archive}#{section.heading}", "2019-11-04", "Bob [[x]]",
                             (("P184", "doctoral advisor"), ("P569", "date of birth")))
    reply = render_reply(result(explanation="Done."), earlier=earlier)
    [line] = [line for line in reply.splitlines() if "earlier request" in line]
    assert line.startswith(":An earlier request") and line.count("[[") == 1 and "~~" not in line
    _, parsed = save_and_read(mediawiki, "Render earlier request", "== Q ==\n" + reply)
    [link] = [match for match in re.finditer(r'<a href="([^"]*)"[^>]*>([^<]*)</a>', parsed["text"])
              if "Archive" in match.group(1)]
    target = urllib.parse.unquote(html.unescape(link.group(1)))
    assert target.split("#", 1) == [f"/index.php/{archive.replace(' ', '_')}", anchor]
    # a space before ':' renders as a no-break space (MediaWiki's French spacing), as in the heading itself
    assert html.unescape(link.group(2)).replace("\xa0", " ") == 'Items with "quotes", 100% & [brackets] ~ bold co_2 : 1'
    shown = html.unescape(re.sub(r"<[^>]+>", "", parsed["text"]))
    assert "An earlier request looks similar: " in shown
    # Who answered and what the answer used, as plain text: the name links nobody's page (no ping).
    assert (" (2019-11-04). Bob [[x]] answered it with a query using doctoral advisor (P184), date of birth "
            "(P569).") in shown
    links = {page["title"]: page.get("exists", False) for page in parsed["links"]}
    assert links.pop(archive) and set(links) <= {"User:Alice", "User talk:Alice", "User:SpinachBot"}  # signatures


def river_rows(count: int) -> list[dict]:
    return [{"river": term(f"http://www.wikidata.org/entity/Q{1000 + n}", kind="uri"),
             "length": term(str(100 + 10 * n), "http://www.w3.org/2001/XMLSchema#decimal")} for n in range(count)]


def traced(language: str = "en") -> AgentResult:
    """A run as the agent records it: the knowledge base's own observations and what they showed as data, the
    stop step last."""
    from agent.kb.base import Claim, Entry, QueryResult, SearchResults, Value
    from agent.observations import observe_entry, observe_query_result, observe_search

    def ran(thought: str, query: str, result: QueryResult) -> Step:
        text, seen = observe_query_result(result)
        step = Step(thought, "execute_sparql", query, text, seen=seen)
        step.record_query(result)
        return step

    draft, final = "SELECT ?river ?length WHERE { ?river wdt:P31 wd:Q4022 }", "SELECT ?river WHERE { ?river ?p ?o }"
    entry, read = observe_entry(Entry("Q4022", "river", "natural flowing watercourse",
                                      [Claim("P279", "subclass of", Value("stream", "Q47521")),
                                       Claim("P31", "instance of", Value("landform type", "Q1"))]))
    nothing, searched = observe_search(SearchResults())
    steps = [Step("Look for rivers.", "search_wikidata", "Flüsse", nothing, seen=searched),
             Step("Read the item for river.", "get_wikidata_entry", "Q4022", entry, seen=read),
             ran("List them all. " + "Then narrow them down to the long ones in the next step. " * 8,
                 draft, QueryResult("ok", ["river", "length"], river_rows(802))),
             ran("Check one.", final, QueryResult("ok", ["river", "length"], river_rows(1))),
             ran("Nothing there.", final + " LIMIT 0", QueryResult("empty")),
             Step("", "stop", "", None)]
    return AgentResult("q", final, river_rows(1), ["river"], steps, "stop", "", Usage(llm_calls=6),
                       explanation="One river.", language=language)


def steps_text(reply: str) -> str:
    """The collapsed steps as a reader copies them: the trace's code block, its lines decoded."""
    block = re.search(r'<div class="mw-collapsible-content"><div class="mw-code">(.*?)</div></div>', reply, re.DOTALL)
    return "\n".join(html.unescape(line) for line in block.group(1).split(BLOCK_LINE_BREAK))


def test_the_trace_counts_result_rows_and_names_the_final_query_only_when_it_is_the_same_text():
    steps = steps_text(render_reply(traced()))
    lines = steps.splitlines()
    draft = lines.index("   SELECT ?river ?length WHERE { ?river wdt:P31 wd:Q4022 }")
    assert lines[draft + 1:draft + 4] == ["   → river  length", "     Q1000  100",
                                          "     … 801 more rows (802 rows in all)"]
    check = lines.index("4. Check one.")
    assert lines[check + 1:check + 4] == ["   (the final query, shown above)", "   → river  length",
                                          "     Q1000  100"]
    assert "SELECT ?river WHERE { ?river ?p ?o } LIMIT 0" in steps and "→ no rows" in steps
    assert steps.count("(the final query, shown above)") == 1


def test_the_trace_has_no_empty_stop_step_no_lone_bracket_and_no_thought_cut_mid_sentence():
    reply = render_reply(traced())
    steps = steps_text(reply)
    lines = steps.splitlines()
    assert lines[-1].startswith("     ") or lines[-1].startswith("   →")  # the last step is the empty result's
    assert "stop()" not in steps and "6." not in steps and "What I did (5 steps, 6 model calls)" in reply
    assert not any(line.strip() in "{}[]" for line in lines)
    assert "   → river (Q4022): natural flowing watercourse" in lines and "     (2 properties)" in lines
    thought = " ".join(line.strip() for line in lines[lines.index(next(x for x in lines if x.startswith("3. "))):
                                                       lines.index("   SELECT ?river ?length WHERE { ?river wdt:P31 "
                                                                   "wd:Q4022 }")])
    assert thought.endswith("in the next step.") and len(thought) <= 3 + 400


@pytest.mark.parametrize(("language", "wanted", "english"), [
    ("de", ["nichts gefunden", "… 801 weitere Zeilen (802 Zeilen insgesamt)", "(die endgültige Abfrage, oben gezeigt)",
            "keine Zeilen", "(2 Eigenschaften)"], ["found", "more", "rows", "query above", "properties"]),
    ("fr", ["rien trouvé", "… 801 lignes de plus (802 lignes en tout)", "(la requête finale, montrée ci-dessus)",
            "aucune ligne", "(2 propriétés)"], ["found", "more", "rows", "query above", "properties"]),
])
def test_a_german_or_french_trace_says_in_its_language_what_the_knowledge_base_answered(language, wanted, english):
    steps = steps_text(render_reply(traced(language)))
    assert all(text in steps for text in wanted), steps
    assert not any(word in steps for word in english), steps


def test_a_search_of_properties_or_an_ask_is_told_without_the_models_english_notes():
    from agent.kb.base import QueryResult, SearchHit, SearchResults
    from agent.observations import observe_query_result, observe_search

    search, searched = observe_search(SearchResults(properties=[
        SearchHit("P2053", "watershed area", "size of a stream's watershed", "quantity"),
        SearchHit("P2043", "length", "measured dimension", "quantity")]))
    answer, asked = observe_query_result(QueryResult("ok", boolean=True))
    assert "Properties:" in search and "[quantity: a number" in search and answer == "True"  # the model's text
    steps = [Step("Suche.", "search_wikidata", "Einzugsgebiet", search, seen=searched),
             Step("Prüfen.", "execute_sparql", "ASK { wd:Q584 wdt:P2053 ?a }", answer, query_status="ok",
                  seen=asked)]
    found = AgentResult("q", "ASK { wd:Q584 wdt:P2053 ?a }", True, [], steps, "stop", "", Usage(llm_calls=3),
                        language="de")
    shown = steps_text(render_reply(found))
    assert "   → watershed area (P2053): size of a stream's watershed\n     … 1 weitere Zeile" in shown
    assert "→ ja" in shown and "Properties" not in shown and "quantity" not in shown and "True" not in shown


def test_a_reply_without_a_query_never_says_it_ran_no_queries():
    searched = AgentResult("q", None, None, [], [Step("s", "search_wikidata", "Euler", "No entities or properties "
                                                       "found.")], "repeated_stop", "", Usage(llm_calls=2))
    reply = html.unescape(render_reply(searched))
    assert "I searched Wikidata for “Euler”." in reply and "0 queries" not in reply
    assert "ran" not in render_reply(AgentResult("q", None, None, [], [], "path_limit", "", Usage()))


def test_headers_are_words_and_numbers_are_written_as_the_replys_language_writes_them():
    xsd = "http://www.w3.org/2001/XMLSchema#"
    row = {"basin_km2": term("24152700", xsd + "decimal"), "dateOfBirth": term("1707", xsd + "integer"),
           "u": term("-1234567.25", xsd + "double"), "label": term("24152700")}
    found = AgentResult("q", "SELECT * {}", [row], list(row), [], "stop")
    tables = {language: preview_table(found, 3, MESSAGES[language]).splitlines() for language in ("en", "de", "fr")}
    assert tables["en"][1] == "! basin km² !! date of birth !! u !! label"
    assert tables["en"][3] == "| 24,152,700 || 1707 || -1,234,567.25 || 24152700"
    assert tables["de"][3] == "| 24.152.700 || 1707 || -1.234.567,25 || 24152700"
    assert tables["fr"][3] == "| 24\u202f152\u202f700 || 1707 || -1\u202f234\u202f567,25 || 24152700"


def test_a_variable_whose_name_says_nothing_is_headed_by_the_property_the_agent_saw_named():
    from agent.kb.base import Claim, Entry, SearchHit, SearchResults, Value
    from agent.observations import observe_entry, observe_search

    search, searched = observe_search(SearchResults(
        [SearchHit("Q4022", "river", "natural flowing watercourse")],
        [SearchHit("P2053", "watershed area", "size of a stream's watershed", "quantity")]))
    entry, read = observe_entry(Entry("Q584", "Rhine", claims=[Claim("P2043", "length", Value("1233"))]))
    row = {"r": term("Rhine"), "u": term("185000"), "x1": term("1233"), "y": term("1")}
    found = AgentResult("q", "SELECT * WHERE { ?r wdt:P2053 ?u ; wdt:P2043 ?x1 ; wdt:P9 ?y }", [row], list(row),
                        [Step("t", "search_wikidata", "river", search, seen=searched),
                         Step("t", "get_wikidata_entry", "Q584", entry, seen=read)],
                        "stop")
    assert preview_table(found, 3, MESSAGES["en"]).splitlines()[1] == "! r !! watershed area !! length !! y"


def test_a_column_holding_a_propertys_value_is_headed_by_its_label_in_the_replys_language():
    row = {"city": term("http://www.wikidata.org/entity/Q64", kind="uri"), "population": term("3600000"),
           "einwohner": term("1"), "basin_km2": term("185000"), "u": term("1233"), "founded": term("1237")}
    found = AgentResult("q", "SELECT * WHERE { ?city wdt:P1082 ?population ; wdt:P1082 ?einwohner ; "
                             "wdt:P2053 ?basin_km2 ; wdt:P2043 ?u ; wdt:P571 ?founded }", [row], list(row), [], "stop")
    german = {"P1082": "Einwohnerzahl", "P2053": "Einzugsgebiet", "P2043": "Länge"}
    assert preview_table(found, 3, MESSAGES["de"], german).splitlines()[1] == (
        "! city !! Einwohnerzahl !! Einwohnerzahl !! Einzugsgebiet km² !! Länge !! founded")
    assert preview_table(found, 3, MESSAGES["en"]).splitlines()[1] == (
        "! city !! population !! einwohner !! basin km² !! u !! founded")


#: Queries whose variables are named in the asker's language, the labels of what they hold in that language, and
#: the headers a reader of that language expects: the label as written (accents, capitals), the units the name
#: gives, and what the name says beyond the label.
NAMED_IN_THE_ASKERS_LANGUAGE = {
    "de": ("SELECT * WHERE { ?stadt wdt:P31 wd:Q515 ; wdt:P1082 ?einwohnerzahl ; wdt:P2046 ?flaeche_km2 ; "
           "wdt:P6 ?buergermeister ; wdt:P1082 ?einwohnerzahl_2020 }",
           {"Q515": "Stadt", "P1082": "Einwohnerzahl", "P2046": "Fläche", "P6": "Leiter der Regierung"},
           "! Stadt !! Einwohnerzahl !! Fläche km² !! Leiter der Regierung !! Einwohnerzahl 2020"),
    "fr": ("SELECT * WHERE { ?film wdt:P31 wd:Q11424 ; wdt:P2047 ?duree ; wdt:P577 ?date ; wdt:P57 ?realisateur }",
           {"Q11424": "film", "P2047": "durée", "P577": "date de publication", "P57": "réalisateur"},
           "! film !! durée !! date de publication !! réalisateur"),
    "es": ("SELECT * WHERE { ?rio wdt:P31 wd:Q4022 ; wdt:P2043 ?longitud ; wdt:P2053 ?cuenca_km2 ; "
           "wdt:P885 ?origen }",
           {"Q4022": "río", "P2043": "longitud", "P2053": "cuenca hidrográfica", "P885": "origen del curso de agua"},
           "! río !! longitud !! cuenca hidrográfica km² !! origen del curso de agua"),
}


@pytest.mark.parametrize("language", sorted(NAMED_IN_THE_ASKERS_LANGUAGE))
def test_a_variable_named_with_the_labels_word_is_headed_by_the_label_as_written(language):
    query, labels, header = NAMED_IN_THE_ASKERS_LANGUAGE[language]
    variables = re.findall(r"\?(\w+)", query)
    row = {name: term("1") for name in variables}
    found = AgentResult("q", query, [row], variables, [], "stop", language=language)
    assert preview_table(found, 3, MESSAGES[language], labels).splitlines()[1] == header


def test_an_item_column_is_headed_by_its_class_in_the_replys_language():
    row = {"river": term("http://www.wikidata.org/entity/Q584", kind="uri"), "length": term("1233")}
    found = AgentResult("q", "SELECT ?river ?length WHERE { ?river wdt:P31/wdt:P279* wd:Q4022 ; wdt:P2043 ?length }",
                        [row], list(row), [], "stop")
    assert preview_table(found, 3, MESSAGES["de"], {"Q4022": "Fluss", "P2043": "Länge"}).splitlines()[1] == (
        "! Fluss !! Länge")
    assert preview_table(found, 3, MESSAGES["de"], {}).splitlines()[1] == "! river !! length"


CITIES = ("SELECT ?stadt ?stadtLabel ?einwohnerzahl ?gruendung WHERE { ?stadt wdt:P31 wd:Q1637706 ; "
          "wdt:P1082 ?einwohnerzahl ; wdt:P571 ?gruendung }")
RIVERS = "SELECT ?rio ?nombre ?longitud WHERE { ?rio wdt:P31 wd:Q4022 ; rdfs:label ?nombre ; wdt:P2043 ?longitud }"


def labelled(value: str, language: str) -> dict:
    return {"type": "literal", "value": value, "xml:lang": language}


def answered(llm_server, wikidata_server, query: str, rows: list[dict], language: str) -> AgentResult:
    """The agent's run that runs *query*, which the stand-in Wikidata answers with *rows*, and stops in
    *language*."""
    from agent import Agent, AgentConfig
    from agent.kb.live import LiveWikidata, WikidataConfig
    from agent.llm import ChatModel, LLMConfig
    from tests.support.llm_server import ToolCallReply
    from tests.support.wikidata_server import select

    script = [ToolCallReply("execute_sparql", {"thought": "Run it.", "sparql": query}),
              ToolCallReply("stop", {"thought": "Done.", "language": language, "explanation": "Voilà."})]
    llm = llm_server(script)
    wikidata = wikidata_server(sparql={query: select(list(rows[0]), rows)})
    return Agent(llm=ChatModel.from_config(LLMConfig(base_url=llm.base_url, api_key="t", max_retries=0, timeout=30)),
                 kb=LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url)),
                 config=AgentConfig()).run("q")


def test_the_steps_show_values_as_a_reader_reads_them_the_model_with_their_language(llm_server, wikidata_server):
    xsd = "http://www.w3.org/2001/XMLSchema#"
    cities = [{"stadt": "Q8686", "stadtLabel": labelled("Schanghai", "de"),
               "einwohnerzahl": term("24870895", xsd + "decimal"),
               "gruendung": term("1291-01-01T00:00:00Z", xsd + "dateTime")},
              {"stadt": "Q1490", "stadtLabel": labelled("Tokio", "de"),
               "einwohnerzahl": term("14047594", xsd + "decimal"),
               "gruendung": term("1457-01-01T00:00:00Z", xsd + "dateTime")}]
    run = answered(llm_server, wikidata_server, CITIES, cities, "de")
    assert "Schanghai@de" in run.steps[0].observation  # the model reads the language it may filter on
    steps = steps_text(render_reply(run)).splitlines()
    shown = steps.index("   (die endgültige Abfrage, oben gezeigt)")
    assert steps[shown + 1:shown + 4] == ["   → stadt  stadtLabel  einwohnerzahl  gruendung",
                                          "     Q8686  Schanghai   24.870.895     1291-01-01",
                                          "     … 1 weitere Zeile (2 Zeilen insgesamt)"]


def test_the_steps_name_a_texts_language_only_where_a_column_mixes_languages(llm_server, wikidata_server):
    rivers = [{"rio": "Q3392", "nombre": labelled("Nilo", "es"), "longitud": term("6650")},
              {"rio": "Q3392", "nombre": labelled("Nile", "en"), "longitud": term("6650")}]
    steps = steps_text(render_reply(answered(llm_server, wikidata_server, RIVERS, rivers, "es")))
    assert "→ rio    nombre     longitud\n     Q3392  Nilo (es)  6650\n     … 1 fila más (2 filas en total)" in steps
    alone = steps_text(render_reply(answered(llm_server, wikidata_server, RIVERS, rivers[:1], "es")))
    assert "     Q3392  Nilo    6650" in alone and "(es)" not in alone and "@" not in alone
