"""What a reader sees of a step: made from what the step kept as data, the same for the reply and the chat page.

A real run (the scripted model's stand-in, the Wikidata stand-in speaking the
Action API and the query service) makes the steps; the reply's steps block
and the chat page's events are read from them.  A step's observation is the
model's text: whatever tabs or ``label (P123)`` it holds, no reader turns it
into a table or a label.
"""

from __future__ import annotations

import html
import json
import re

from agent import Agent, AgentConfig
from agent.graph import WIKIDATA
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.llm import ChatModel, LLMConfig
from agent.summaries import Said, property_names, summarize
from agent.trace import AgentResult, Step, StopReason, Usage
from bot.render import render_reply
from bot.wikitext import BLOCK_LINE_BREAK
from serve.events import step_event
from tests.support.llm_server import ToolCallReply
from tests.support.wikidata_server import entity, item_snak, malformed, select, statement

BROKEN = "SELECT ?school WHERE { wd:Q42 wdt:P69 ?school"
QUERY = "SELECT ?school WHERE { wd:Q42 wdt:P69 ?school . wd:Q42 wdt:P31 wd:Q5 }"
#: What the model wrote as its thought and what a model-made observation could hold: tabs, ``label (P123)`` pairs.
TABLE_LIKE = "x\txLabel\nQ42\tDouglas Adams (P123)\n(1 row)\nIDs new to this run (check them): Q42 — writer."


def entities() -> list[dict]:
    return [entity("Q42", "Douglas Adams", "English writer",
                   {"P69": [statement(item_snak("P69", "Q691283"))]}),
            entity("Q691283", "St John's College", "college of the University of Cambridge"),
            entity("Q5", "human", "common name of Homo sapiens"),
            entity("P31", "instance of", "that class of which this subject is a particular example",
                   datatype="wikibase-item"),
            entity("P69", "educated at", "educational institution attended by subject", datatype="wikibase-item",
                   claims={"P1855": [statement(item_snak("P1855", "Q42"), [item_snak("P69", "Q691283")])]})]


def run(llm_server, wikidata_server) -> AgentResult:
    """One run that takes every action once: two searches, an entry, a property's examples, an entry that does
    not exist, a query the service refuses, a query with rows (naming IDs no step had shown), then stops."""
    script = [ToolCallReply("search_wikidata", {"thought": "Find him.", "query": "Douglas"}),
              ToolCallReply("search_wikidata", {"thought": "Find the property.", "query": "educated"}),
              ToolCallReply("get_wikidata_entry", {"thought": "Read him.", "qid": "Q42"}),
              ToolCallReply("get_property_examples", {"thought": "How is it used?", "pid": "P69"}),
              ToolCallReply("get_wikidata_entry", {"thought": "A typo.", "qid": "Q999999"}),
              ToolCallReply("execute_sparql", {"thought": "Try.", "sparql": BROKEN}),
              ToolCallReply("execute_sparql", {"thought": "Again.", "sparql": QUERY}),
              ToolCallReply("stop", {"thought": "Done.", "language": "en", "explanation": "His college."})]
    llm = llm_server(script)
    wikidata = wikidata_server(entities={data["id"]: data for data in entities()},
                               sparql={BROKEN: malformed('Encountered "<EOF>" at line 1, column 45.'),
                                       QUERY: select(["school"], [{"school": "Q691283"}])})
    return Agent(llm=ChatModel.from_config(LLMConfig(base_url=llm.base_url, api_key="t", max_retries=0, timeout=30)),
                 kb=LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url)),
                 config=AgentConfig()).run("Where did Douglas Adams study?")


def steps_text(reply: str) -> str:
    block = re.search(r'<div class="mw-collapsible-content"><div class="mw-code">(.*?)</div></div>', reply, re.DOTALL)
    return "\n".join(html.unescape(line) for line in block.group(1).split(BLOCK_LINE_BREAK))


def events(result: AgentResult) -> list[dict]:
    return [step_event(number, step, WIKIDATA, {}) for number, step in enumerate(result.steps, 1)]


def test_each_action_shows_readers_what_it_saw_from_the_data_it_kept(llm_server, wikidata_server):
    result = run(llm_server, wikidata_server)
    assert [step.action for step in result.steps][-1] == "stop" and result.stop_reason == StopReason.STOP
    said = [summarize(step).said for step in result.steps]
    assert said == [Said.FOUND, Said.FOUND, Said.ENTRY, Said.FOUND, Said.NO_SUCH_ENTITY, Said.SYNTAX_ERROR,
                    Said.ROWS, Said.NOTHING]
    search, prop, entry, examples, missing, broken, rows, _ = result.steps
    assert summarize(search).lines == ["Douglas Adams (Q42): English writer"]
    assert summarize(prop).lines == ["educated at (P69): educational institution attended by subject"]
    assert summarize(entry).lines == ["Douglas Adams (Q42): English writer"] and summarize(entry).count == 1
    assert summarize(examples).lines == ["Douglas Adams (Q42) P69 St John's College (Q691283)"]
    assert summarize(broken).message.startswith('Encountered "<EOF>"')
    assert summarize(rows).count == 1 and summarize(rows).unseen_ids == ["P31", "Q5"]
    assert property_names(result.steps) == {"P69": "educated at"}

    shown = steps_text(render_reply(result))
    for line in ("   search_wikidata(Douglas)\n   → Douglas Adams (Q42): English writer",
                 "   get_wikidata_entry(Q42)\n   → Douglas Adams (Q42): English writer\n     (1 property)",
                 "   get_property_examples(P69)\n   → Douglas Adams (Q42) P69 St John's College (Q691283)",
                 "   get_wikidata_entry(Q999999)\n   → no such entity",
                 '   → syntax error: Encountered "<EOF>" at line 1, column 45.',
                 "   (the final query, shown above)\n   → school\n     Q691283"):
        assert line in shown, shown

    page = events(result)
    assert page[0]["said"] == ["Douglas Adams (Q42): English writer"]
    assert page[2]["said"] == ["Douglas Adams (Q42): English writer", "(1 property)"]
    assert page[3]["said"] == ["Douglas Adams (Q42) P69 St John's College (Q691283)"]
    assert page[4]["said"] == ["No such entity."]
    assert page[5]["said"][0].startswith('Syntax error: Encountered "<EOF>"')
    assert page[6]["table"]["rows"] == [[["Q691283"]]] and "said" not in page[6]
    assert page[6]["unseen_ids"] == ["P31", "Q5"]


def test_the_ids_new_to_a_run_are_a_line_of_their_own_never_a_row(llm_server, wikidata_server):
    result = run(llm_server, wikidata_server)
    ran = result.steps[6]
    assert "IDs new to this run (check them): " in ran.observation  # the model reads the note after the rows
    page = json.dumps(events(result), ensure_ascii=False)
    assert "IDs new to this run" not in page and "check them" not in page
    shown = steps_text(render_reply(result))
    assert "IDs new to this run" not in shown


def test_what_a_step_kept_survives_its_record_and_a_record_without_it_still_loads(llm_server, wikidata_server):
    result = run(llm_server, wikidata_server)
    again = AgentResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.steps == result.steps
    old = result.to_dict()
    for step in old["steps"]:
        del step["seen"]  # a record written before steps kept what they saw
    before = AgentResult.from_dict(old)
    assert all(step.seen is None for step in before.steps)
    assert [summarize(step).said for step in before.steps][:6] == [Said.TEXT] * 6
    assert summarize(before.steps[6]).said == Said.ROWS  # its rows were kept as data already


def test_a_models_table_like_text_is_shown_as_text_never_as_a_table_or_a_label():
    """Text the model wrote (an action it got wrong, a step recorded before steps kept data) holds tabs and
    ``label (P123)``: each reader shows its lines as they are."""
    steps = [Step(TABLE_LIKE, "search_wikidata", TABLE_LIKE, TABLE_LIKE),
             Step(TABLE_LIKE, "get_wikidata_entry", "Q42", TABLE_LIKE),
             Step(TABLE_LIKE, "execute_sparql", "SELECT ?x WHERE { ?x ?p ?o }", TABLE_LIKE, query_status="ok",
                  row_count=1),
             Step(TABLE_LIKE, "", "", TABLE_LIKE)]
    result = AgentResult("q", None, None, [], steps, StopReason.ACTION_LIMIT, "", Usage(llm_calls=4))
    assert property_names(result.steps) == {}
    assert summarize(steps[0]).said == Said.TEXT and summarize(steps[0]).lines == TABLE_LIKE.splitlines()
    assert summarize(steps[2]).lines == ["x\txLabel"], "a query's note and counts were said to the model alone"
    page = events(result)
    assert not any("table" in event for event in page)
    assert page[0]["said"] == TABLE_LIKE.splitlines() and page[2]["said"] == ["x\txLabel"]
    shown = steps_text(render_reply(result))
    assert "   → x\txLabel\n     … 3 more lines" in shown and "x  xLabel" not in shown, shown


def test_a_search_hit_whose_label_looks_like_a_property_names_only_the_property_it_is():
    from agent.kb.base import SearchHit, SearchResults
    from agent.observations import observe_search

    text, seen = observe_search(SearchResults([SearchHit("Q1", "fake (P999)", "x\ty (P998)")],
                                              [SearchHit("P50", "author (P123)", "", "wikibase-item")]))
    step = Step("t", "search_wikidata", "fake", text, seen=seen)
    assert property_names([step]) == {"P50": "author (P123)"}
    assert summarize(step).lines == ["fake (P999) (Q1): x y (P998)", "author (P123) (P50)"]
