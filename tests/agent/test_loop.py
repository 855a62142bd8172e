"""The step loop, driven by a scripted OpenAI-compatible server and a stand-in Wikidata."""

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from agent import Agent, AgentConfig, AgentContext, AgentResult
from agent.kb.http import HttpClient
from agent.kb.live import LiveWikidata, WikidataConfig
from agent.llm import ChatModel, LLMConfig, LLMUnavailable
from tests.support.euler import EULER_ADVISORS_QUERY, euler_entities
from tests.support.fault_proxy import Fault, FaultProxy, wiki_action
from tests.support.llm_server import (EndlessReply, ErrorReply, RawReply, SlowReply, TextReply, ToolCallReply,
                                      prompt_tokens)
from tests.support.processes import PATIENCE
from tests.support.wikidata_server import SparqlReply, entity, select


def call(name, argument=None, thought="thinking"):
    arguments = {"thought": thought}
    if argument is not None:
        arguments[{"search_wikidata": "query", "get_wikidata_entry": "qid", "get_property_examples": "pid",
                   "execute_sparql": "sparql"}.get(name, "argument")] = argument
    return ToolCallReply(name, arguments)


EMPTY_QUERY = "SELECT ?x WHERE { wd:Q7604 wdt:P1 ?x }"


@pytest.fixture
def kb(wikidata_server):
    server = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    server.add(*euler_entities())
    return LiveWikidata(WikidataConfig(api_url=server.api_url, sparql_url=server.sparql_url),
                        http=HttpClient(backoff=0.01))


def make_agent(server, kb, **config) -> Agent:
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="test", max_retries=2, timeout=5))
    return Agent(llm=llm, kb=kb, config=AgentConfig(**config))


def test_a_run_explores_then_stops_on_the_query_with_its_rows(llm_server, kb):
    server = llm_server([
        call("search_wikidata", "Leonhard Euler", "Find Euler first."),
        call("get_property_examples", "P184"),
        call("execute_sparql", EULER_ADVISORS_QUERY),
        call("stop"),
    ])
    seen = []
    result = make_agent(server, kb).run("Who were the doctoral advisors of Leonhard Euler?", on_step=seen.append)
    assert result.stop_reason == "stop"
    assert result.final_sparql == EULER_ADVISORS_QUERY
    assert result.answer == [{"advisor": {"type": "uri", "value": "http://www.wikidata.org/entity/Q124500"}}]
    assert [step.action for step in result.steps] == ["search_wikidata", "get_property_examples",
                                                      "execute_sparql", "stop"]
    assert result.steps[0].thought == "Find Euler first."
    assert "Leonhard Euler (Q7604): Swiss mathematician" in result.steps[0].observation
    assert "Q124500" in result.steps[2].observation and result.steps[2].query_status == "ok"
    assert seen == result.steps
    # The model's own query is the answer: the end of the run rewrites nothing and runs nothing more.
    assert result.usage.llm_calls == 4 and result.usage.kb_calls == 3 and result.end_of_run == []
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    assert AgentResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_one_llm_call_per_step_with_policy_sampling_and_history_last(llm_server, kb):
    server = llm_server([call("search_wikidata", "Euler"), call("execute_sparql", EULER_ADVISORS_QUERY),
                         call("stop")])
    make_agent(server, kb).run("Who advised Euler?")
    assert len(server.requests) == 3
    first, last = server.requests[0], server.requests[-1]
    assert (first["temperature"], first["top_p"]) == (1.0, 0.9)
    assert {tool["function"]["name"] for tool in first["tools"]} == {
        "search_wikidata", "get_wikidata_entry", "get_property_examples", "execute_sparql", "stop"}
    # The static instructions and the question stay the same prefix; the history only grows at the end.
    assert last["messages"][:2] == first["messages"][:2]
    assert last["messages"][-1]["role"] == "tool" and "Q124500" in last["messages"][-1]["content"]


def test_answer_guarantee_is_a_setting(llm_server, kb):
    server = llm_server([call("stop"), call("stop")])
    make_agent(server, kb, answer_guaranteed=True, max_total_actions=1).run("q")
    make_agent(server, kb, max_total_actions=1).run("q")
    assert "has an answer" in server.requests[0]["messages"][0]["content"]
    assert "has an answer" not in server.requests[1]["messages"][0]["content"]


def test_context_from_the_asker_reaches_the_prompt(llm_server, kb):
    server = llm_server([call("stop")])
    context = AgentContext(draft_queries=["SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }"], entities=["Q7604", "P184"],
                           thread="Someone: try P184", previous_query=EULER_ADVISORS_QUERY)
    make_agent(server, kb, max_total_actions=1).run("Who advised Euler?", context=context)
    prompt = server.requests[0]["messages"][1]["content"]
    assert "SELECT ?x WHERE { ?x wdt:P31 wd:Q5 }" in prompt and "Q7604, P184" in prompt
    assert "try P184" in prompt
    assert "Your earlier answer in this thread used this query; revise it" in prompt
    assert EULER_ADVISORS_QUERY in prompt


def test_a_repeated_action_is_rolled_back_alone_and_the_next_prompt_says_why(llm_server, kb):
    server = llm_server([
        call("search_wikidata", "Euler"),
        call("get_wikidata_entry", "Q7604"),
        call("search_wikidata", "Euler"),        # repeats step 1: only this step is undone
        call("execute_sparql", EULER_ADVISORS_QUERY),
        call("stop"),
    ])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert [step.rolled_back for step in result.steps] == [False, False, True, False, False]
    assert result.steps[2].observation is None
    # The verified steps stay in the prompt, and a note tells the model what was undone.
    messages = server.requests[3]["messages"]
    assert len(messages) == 2 + 4 + 1
    assert messages[-1]["role"] == "user" and "repeats step 1" in messages[-1]["content"]
    assert result.final_sparql == EULER_ADVISORS_QUERY and len(result.path) == 4


def test_stop_after_an_empty_result_drops_the_stop_only(llm_server, kb):
    server = llm_server([
        call("search_wikidata", "Euler"),
        call("execute_sparql", EMPTY_QUERY),
        call("stop"),
        call("execute_sparql", EULER_ADVISORS_QUERY),
        call("stop"),
    ])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert [step.rolled_back for step in result.steps] == [False, False, True, False, False]
    assert result.steps[1].observation.startswith("The query returned an empty result.\n")
    assert "P1 does not exist" in result.steps[1].observation  # typed from memory: know before use says so
    messages = server.requests[3]["messages"]
    assert "The query returned an empty result." in messages[-2]["content"]  # the empty result stays
    assert "Already tried: execute_sparql(SELECT ?x WHERE { wd:Q7604 wdt:P1 ?x }) → empty result" in \
        messages[-1]["content"] and "do not stop on an empty" in messages[-1]["content"]
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY


def test_stop_before_any_query_is_rolled_back(llm_server, kb):
    server = llm_server([call("search_wikidata", "Euler"), call("stop"),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.steps[1].rolled_back
    assert "stop() before any query ran" in server.requests[2]["messages"][-1]["content"]
    assert result.stop_reason == "stop" and [step.action for step in result.path] == [
        "search_wikidata", "execute_sparql", "stop"]


def test_a_model_that_insists_on_stopping_after_empty_results_ends_soon(llm_server, wikidata_server):
    wikidata = wikidata_server(sparql={})
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01))

    def script(body):
        if "tools" not in body:  # the end-of-run extraction call
            return TextReply('{"sparql": "", "explanation": "Nothing was found.", "language": "en"}')
        last_call = next((m["tool_calls"][0]["function"]["name"] for m in reversed(body["messages"])
                          if m.get("tool_calls")), None)
        undone = body["messages"][-1]["role"] == "user" and "Undone" in body["messages"][-1]["content"]
        return call("stop") if last_call == "execute_sparql" and not undone else call("execute_sparql", EMPTY_QUERY)

    server = llm_server(script)
    result = make_agent(server, kb).run("Who advised Euler?")
    queries = [r for r in wikidata.requests if r["path"] == "/sparql"]
    assert len(queries) <= 2 and len(result.steps) <= 10
    assert result.stop_reason == "repeated_stop" and "without a query that returned results" in result.stop_message
    assert result.final_sparql is None and result.best_effort and result.explanation == "Nothing was found."


def test_total_budget_ends_with_the_last_query_that_returned_rows(llm_server, kb):
    script = [call("execute_sparql", EULER_ADVISORS_QUERY), call("execute_sparql", EMPTY_QUERY)]
    script += [call("search_wikidata", f"term {i}") for i in range(10)]
    server = llm_server(script)
    result = make_agent(server, kb, max_total_actions=5).run("Who advised Euler?")
    assert result.stop_reason == "action_limit" and len(result.steps) == 5
    assert result.final_sparql == EULER_ADVISORS_QUERY
    assert result.answer[0]["advisor"]["value"].endswith("Q124500")
    assert "limit" in result.stop_message


def test_path_budget_counts_only_steps_that_were_not_rolled_back(llm_server, kb):
    script = [call("search_wikidata", "a"), call("search_wikidata", "a")]  # one rollback
    script += [call("search_wikidata", f"term {i}") for i in range(10)]
    server = llm_server(lambda body: TextReply("{}") if "tools" not in body else script.pop(0))
    result = make_agent(server, kb, max_path_actions=3).run("q")
    assert result.stop_reason == "path_limit"
    assert len(result.path) == 3 and len(result.steps) == 4
    assert result.final_sparql is None and result.answer is None


@pytest.mark.parametrize("reply, message", [
    (TextReply("I think the answer is Bernoulli."), "No tool was called"),
    (ToolCallReply("delete_everything", {"thought": "x"}), "Unknown action"),
    (ToolCallReply("execute_sparql", "{not json"), "not a JSON object"),
    (ToolCallReply("execute_sparql", '{"sparql": ' + "[" * 50_000 + "]" * 50_000 + "}"), "not a JSON object"),
    (ToolCallReply("execute_sparql", {"thought": "run it", "sparql": "   "}), "was empty"),
    (ToolCallReply("get_wikidata_entry", {"thought": "read", "qid": "Leonhard Euler"}), "not an item ID"),
])
def test_malformed_replies_get_a_corrective_observation(llm_server, kb, reply, message):
    server = llm_server([reply, call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert message in result.steps[0].observation
    assert result.stop_reason == "stop"
    assert message in json.dumps(server.requests[1]["messages"][-1])


def test_endpoints_without_tools_get_the_text_protocol(llm_server, kb):
    server = llm_server([
        TextReply("Thought: search first\nAction: search_wikidata(Leonhard Euler)"),
        TextReply(f"Thought: run it\nAction: execute_sparql(```sparql\n{EULER_ADVISORS_QUERY}\n```)"),
        TextReply("Thought: done\nAction: stop()"),
    ], supports_tools=False)
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.final_sparql == EULER_ADVISORS_QUERY
    assert "tools" not in server.requests[-1]
    assert "Action: <action name>(<argument>)" in server.requests[-1]["messages"][0]["content"]
    assert result.usage.llm_calls == 4  # the refused tools request is counted too


def test_a_model_that_answers_tools_in_prose_gets_one_error_then_the_text_protocol(llm_server, kb):
    server = llm_server([
        TextReply("I believe Euler's advisor was Johann Bernoulli."),            # tools accepted, prose given
        TextReply("As I said, it was Johann Bernoulli."),                        # again: text protocol from now
        TextReply(f"Thought: run it\nAction: execute_sparql({EULER_ADVISORS_QUERY})"),
        TextReply("Thought: done\nExplanation: P184.\nLanguage: en\nAction: stop()"),
    ])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert "No tool was called" in result.steps[0].observation
    assert "No tool was called" in json.dumps(server.requests[1]["messages"][-1])   # the error, fed back once
    assert "tools" in server.requests[1] and "tools" not in server.requests[2]
    assert server.requests[2]["stop"] == ["\nObservation:"] and "Thought: <your reasoning>" in \
        server.requests[2]["messages"][0]["content"]
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY
    assert (result.protocol, result.protocol_switch) == ("text", "2 malformed tool calls")


def test_a_wrong_argument_name_is_named_and_the_model_corrects_it(llm_server, kb):
    server = llm_server([ToolCallReply("execute_sparql", {"thought": "run it", "query": EULER_ADVISORS_QUERY}),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.steps[0].observation == 'execute_sparql takes its argument as "sparql"; the call gave "query".'
    assert result.final_sparql == EULER_ADVISORS_QUERY and result.protocol == "tools"
    assert all("tools" in body for body in server.requests)


def test_the_protocol_switch_belongs_to_one_question(llm_server, kb):
    server = llm_server(lambda body: TextReply("Thought: done\nAction: stop()"), supports_tools=False)
    agent = make_agent(server, kb, max_total_actions=1)
    first, second = agent.run("q1"), agent.run("q2")
    assert (first.protocol, first.protocol_switch) == ("text", "the endpoint refused tool definitions")
    assert second.protocol == "text"
    asked = [body for body in server.requests if body["messages"][0]["role"] == "system"]
    questions = [next(m["content"] for m in body["messages"] if m["role"] == "user") for body in asked]
    # Each question asks with tools first; the refusal of the first does not decide for the second.
    assert ["tools" in body for body, q in zip(asked, questions) if q.endswith("q1")][0]
    assert ["tools" in body for body, q in zip(asked, questions) if q.endswith("q2")][0]


@pytest.mark.parametrize("flavour", ["vllm", "llama.cpp"])
def test_a_context_length_error_ends_the_run_once_with_a_best_effort(llm_server, kb, flavour):
    script = [call("execute_sparql", EULER_ADVISORS_QUERY), call("search_wikidata", "Leonhard Euler"),
              call("get_wikidata_entry", "Q7604"), call("stop")]
    sizing = llm_server(list(script))
    make_agent(sizing, kb, max_completion_tokens=100).run("Who advised Euler?")
    fits = prompt_tokens(sizing.requests[1]) + 100   # the second step fits, the third does not
    server = llm_server(lambda body: script[sum(m["role"] == "tool" for m in body["messages"])]
                        if "tools" in body else TextReply("{}"), context_tokens=fits, server=flavour)
    result = make_agent(server, kb, max_completion_tokens=100).run("Who advised Euler?")
    assert result.stop_reason == "context_length"
    assert ("maximum context length is" if flavour == "vllm" else "exceeds the available context size") \
        in result.stop_message
    assert [body.get("tools") is not None for body in server.requests] == [True, True, True, False]
    # Not sent again; the extraction call did not fit either, so the last query with rows is the best effort.
    assert result.final_sparql == EULER_ADVISORS_QUERY and result.best_effort


def test_an_endpoint_that_refuses_required_is_asked_with_auto_for_the_rest_of_the_question(llm_server, kb,
                                                                                            caplog):
    # llama-cpp-python's server with chatml-function-calling: "required" is HTTP 500 with an empty message.
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("execute_sparql", EULER_ADVISORS_QUERY),
                         call("stop"), call("stop")], accepts_required=False)
    agent = make_agent(server, kb, max_total_actions=3)
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="agent"):
        result = agent.run("Who advised Euler?")
    assert time.monotonic() - started < 2  # the refusal is known at once: not asked again with backoff
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY
    assert [body["tool_choice"] for body in server.requests] == ["required", "auto", "auto", "auto"]
    assert (result.protocol, result.tool_choice) == ("tools", "auto")
    assert result.protocol_switch == "tool_choice 'auto' (HTTP 500 to tool_choice 'required': no message)"
    assert [record.getMessage() for record in caplog.records] == [
        "the model endpoint refused a tools request (HTTP 500 to tool_choice 'required': no message): asking "
        "with tool_choice 'auto' for the rest of this question"]
    agent.run("Who advised Euler, again?")  # the next question asks with "required" first again
    assert [body["tool_choice"] for body in server.requests[4:6]] == ["required", "auto"]


def test_an_endpoint_that_refuses_both_tool_choices_gets_the_text_protocol(llm_server, kb):
    script = [TextReply(f"Thought: run it\nAction: execute_sparql({EULER_ADVISORS_QUERY})"),
              TextReply("Thought: done\nAction: stop()")]
    server = llm_server(lambda body: ErrorReply(500, "Internal Server Error") if "tools" in body else script.pop(0))
    result = make_agent(server, kb).run("Who advised Euler?")
    # Neither refusal is sent again (the client would retry a 500 twice).
    assert [body.get("tool_choice") for body in server.requests] == ["required", "auto", None, None]
    assert result.stop_reason == "stop" and result.protocol == "text"
    assert result.protocol_switch == ("tool_choice 'auto' (HTTP 500 to tool_choice 'required': Internal Server "
                                      "Error); the endpoint refused tools with every tool_choice (HTTP 500 to "
                                      "tool_choice 'auto': Internal Server Error)")


def test_a_tool_choice_the_endpoint_has_answered_is_not_given_up_for_a_later_failure(llm_server, kb):
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY)] + [ErrorReply(500, "boom")] * 3)
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "llm_error" and result.tool_choice == "required" and result.protocol_switch == ""
    assert len(server.requests) == 1 + 3  # the later request gets the client's retries (max_retries=2)


def test_earlier_tool_calls_are_sent_back_with_text_content_which_llama_cpp_python_requires(llm_server, kb):
    # The server as llama-cpp-python's: "required" refused, and a null content beside tool calls fails validation.
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("execute_sparql", EULER_ADVISORS_QUERY),
                         call("stop")], accepts_required=False, accepts_null_content=False)
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY
    calls = [message for message in server.requests[-1]["messages"] if message.get("tool_calls")]
    assert len(calls) == 2 and all(message["content"] == "" for message in calls)


def test_the_stand_in_refuses_null_content_as_llama_cpp_python_does(llm_server):
    server = llm_server([TextReply("unused")], accepts_null_content=False)
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", max_retries=0))
    messages = [{"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": "stop", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_0", "content": "ok"}]
    with pytest.raises(LLMUnavailable, match="(?s)500 - 7 validation errors:.*'messages', 1, "
                                             "'ChatCompletionRequestAssistantMessage', 'content'"):
        llm.complete(messages, temperature=0)


def test_a_reply_slower_than_the_timeout_is_not_sent_again(llm_server, kb):
    server = llm_server([call("search_wikidata", "Leonhard Euler")] + [SlowReply(2, call("stop"))] * 4)
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", max_retries=3, timeout=0.5))
    started = time.monotonic()
    result = Agent(llm=llm, kb=kb).run("Who advised Euler?")
    assert time.monotonic() - started < 1.5  # one timeout, not one per retry
    assert len(server.requests) == 2 and result.usage.llm_calls == 2  # the call that timed out is counted
    assert result.stop_reason == "llm_error" and "no reply within 0.5 s" in result.stop_message


def test_a_model_that_gives_no_usable_action_ends_the_run_early(llm_server, kb):
    # A server that ignores tools (the model's own chat template): prose, whatever is asked.
    server = llm_server(lambda body: TextReply("Thought: Douglas Adams was born in 1952."))
    result = make_agent(server, kb).run("When was Douglas Adams born?")
    assert result.stop_reason == "no_usable_action"
    assert result.stop_message.startswith("the model gave no usable action 3 times in a row (the last: No action")
    # Two prose replies to tools requests, then three in the text protocol, then the extraction call.
    assert [("tools" in body) for body in server.requests] == [True, True, False, False, False, False]
    assert result.usage.llm_calls == 6 and len(result.steps) == 5 and result.final_sparql is None
    # The reply is given back as the model wrote it, not wrapped in a second "Thought:".
    replies = [m["content"] for m in server.requests[4]["messages"] if m["role"] == "assistant"]
    assert replies[-1] == "Thought: Douglas Adams was born in 1952."


def test_a_usable_action_resets_the_count_of_unusable_replies(llm_server, kb):
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("get_wikidata_entry", "x"),
                         call("get_wikidata_entry", "y"), call("get_wikidata_entry", "Q7604"),
                         call("get_wikidata_entry", "z"), call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "stop" and len(result.steps) == 7


def test_without_a_model_named_the_endpoints_own_is_used_and_reported(llm_server, kb):
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")], model="Qwen/Qwen2.5-7B")
    llm = ChatModel.from_config(LLMConfig.from_env({"OPENAI_BASE_URL": server.base_url}))
    result = Agent(llm=llm, kb=kb).run("Who advised Euler?")
    assert server.requests[0]["model"] == "Qwen/Qwen2.5-7B" and result.model == "Qwen/Qwen2.5-7B"
    assert LLMConfig.from_env({}, api_key="sk").model == "gpt-4o"           # OpenAI itself: the default


def test_long_entries_are_pruned_at_temperature_zero_and_short_ones_are_not(llm_server, kb):
    def script(body):
        if "tools" not in body:
            return TextReply('```json\n{"doctoral advisor (P184)": "Johann Bernoulli (Q124500)"}\n```')
        step = sum(message["role"] == "tool" for message in body["messages"])
        return [call("get_wikidata_entry", "Q7604"), call("get_wikidata_entry", "Q124500"),
                call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")][step]

    server = llm_server(script)
    result = make_agent(server, kb, prune_threshold=300).run("Who advised Euler?")
    pruning = [body for body in server.requests if "tools" not in body]
    assert len(pruning) == 1 and pruning[0]["temperature"] == 0.0
    assert "Who advised Euler?" in pruning[0]["messages"][0]["content"]
    assert result.steps[0].observation.endswith('{"doctoral advisor (P184)": "Johann Bernoulli (Q124500)"}')
    assert "instance of (P31)" in result.steps[1].observation  # short: shown whole
    assert result.usage.llm_calls == 5


def test_rate_limit_is_retried_after_the_wait_the_endpoint_asks(llm_server, kb):
    server = llm_server([ErrorReply(429, "rate limited", retry_after=1),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    started = time.monotonic()
    result = make_agent(server, kb).run("Who advised Euler?")
    assert time.monotonic() - started >= 1.0
    assert result.stop_reason == "stop" and len(server.requests) == 3
    assert result.usage.llm_calls == 3  # every request sent, the one the endpoint was too busy for too


def test_an_endpoint_that_keeps_failing_ends_the_run_cleanly(llm_server, kb):
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY)] + [ErrorReply(500, "boom")] * 5)
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "llm_error"
    assert len(result.steps) == 1 and result.final_sparql is None
    assert len(server.requests) == 1 + 3  # max_retries=2: three tries


def test_a_slow_endpoint_times_out_into_an_llm_error(llm_server, kb):
    server = llm_server([SlowReply(3, call("stop"))] * 3)
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", max_retries=0, timeout=0.5))
    result = Agent(llm=llm, kb=kb).run("q")
    assert result.stop_reason == "llm_error"


def test_an_unreachable_knowledge_base_ends_the_run(llm_server):
    kb = LiveWikidata(WikidataConfig(api_url="http://127.0.0.1:9/w/api.php", sparql_url="http://127.0.0.1:9/s"),
                      http=HttpClient(max_retries=0))
    server = llm_server([call("search_wikidata", "Euler")])
    result = make_agent(server, kb).run("q")
    assert result.stop_reason == "kb_error"
    assert result.steps[0].observation.startswith("The knowledge base could not be reached")


def test_a_failing_query_service_is_an_observation_and_the_run_goes_on(llm_server, wikidata_server):
    def answer(query):
        if query == EMPTY_QUERY:
            return SparqlReply(503, "Service Unavailable", {"Retry-After": "0"})
        return select(["advisor"], [{"advisor": "Q124500"}])

    wikidata = wikidata_server(sparql=answer)
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01, max_retries=1))
    server = llm_server([call("execute_sparql", EMPTY_QUERY), call("execute_sparql", EULER_ADVISORS_QUERY),
                         call("stop", thought="done")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert "HTTP 503" in result.steps[0].observation and "lighter query" in result.steps[0].observation
    assert result.stop_reason == "stop" and result.end_of_run == []
    assert result.final_sparql == EULER_ADVISORS_QUERY


def test_each_step_asks_for_one_tool_call_with_a_capped_completion(llm_server, kb):
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    make_agent(server, kb, max_completion_tokens=700).run("Who advised Euler?")
    first = server.requests[0]
    assert first["parallel_tool_calls"] is False and first["tool_choice"] == "required"
    assert first["max_tokens"] == 700


def test_old_steps_shrink_to_what_later_steps_used(llm_server, kb):
    server = llm_server([
        call("search_wikidata", "Euler", "Look for Euler and pick the mathematician."),
        call("get_wikidata_entry", "Q7604", "Read his entry."),
        call("get_property_examples", "P184"),
        call("execute_sparql", EULER_ADVISORS_QUERY),
        call("stop"),
    ])
    make_agent(server, kb, recent_steps=2).run("Who advised Euler?")
    last = json.dumps(server.requests[-1]["messages"], ensure_ascii=False)
    assert "Look for Euler" not in last and "Read his entry." not in last  # old thoughts leave the prompt
    assert "Leonhard Euler (Q7604)" in last and "Euler (crater) (Q7605)" not in last and "1 other hits" in last
    assert "doctoral advisor (P184)" in last and "date of birth" not in last and "other statements" in last
    # The same steps, while recent, were shown whole.
    second = json.dumps(server.requests[2]["messages"], ensure_ascii=False)
    assert "Euler (crater) (Q7605)" in second and "Read his entry." in second


def test_an_old_query_keeps_its_first_rows_its_count_and_the_labels_of_its_new_ids(llm_server, wikidata_server):
    students = "SELECT ?student WHERE { ?student wdt:P184 wd:Q7604 }"
    wikidata = wikidata_server(sparql={students: select(["student"], [{"student": f"Q{n}"} for n in range(1, 13)])})
    wikidata.add(*euler_entities())
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01))
    server = llm_server([call("execute_sparql", students), call("search_wikidata", "Euler"),
                         call("get_wikidata_entry", "Q7604"), call("stop")])
    make_agent(server, kb, recent_steps=1).run("Who were Euler's students?")
    new = [message["content"] for message in server.requests[1]["messages"] if message["role"] == "tool"][0]
    assert "Q12" in new and "P184 = doctoral advisor [wikibase-item]; Q7604 = Leonhard Euler — Swiss" in new
    old = [message["content"] for message in server.requests[-1]["messages"] if message["role"] == "tool"][0]
    assert old == ("student\nQ1\nQ2\nQ3\n...\n(12 rows)\n"
                   "IDs new to this run (check them): P184 = doctoral advisor; Q7604 = Leonhard Euler.")


def test_a_failed_pruning_call_falls_back_to_a_deterministic_cut(llm_server, kb):
    def script(body):
        if "tools" not in body:
            return TextReply("Here are the relevant parts: P184.")  # not JSON: the cut is used
        step = sum(message["role"] == "tool" for message in body["messages"])
        return [call("get_wikidata_entry", "Q7604"), call("execute_sparql", EULER_ADVISORS_QUERY),
                call("stop")][step]

    server = llm_server(script)
    result = make_agent(server, kb, prune_threshold=100).run("Who advised Euler?")
    entry = result.steps[0].observation
    assert entry.startswith("Leonhard Euler (Q7604): Swiss mathematician")
    assert "doctoral advisor (P184)" in entry and "Here are the relevant parts" not in entry
    assert entry.index("instance of (P31)") < entry.index("educated at (P69)") < entry.index("doctoral advisor (P184)")
    assert result.stop_reason == "stop"


def test_the_text_protocol_sends_a_stop_sequence_and_reads_the_explanation(llm_server, kb):
    server = llm_server([
        TextReply('Thought: search\nAction: search_wikidata("Leonhard Euler")\nObservation: Euler (Q1): made up'),
        TextReply(f"Thought: run it\nAction: execute_sparql({EULER_ADVISORS_QUERY})"),
        TextReply("Thought: done\nExplanation: Die Abfrage liefert Eulers Doktorvater (P184).\nLanguage: de\n"
                  "Action: stop()"),
    ], supports_tools=False)
    result = make_agent(server, kb).run("Wer war Eulers Doktorvater?")
    assert server.requests[-1]["stop"] == ["\nObservation:"]
    assert result.steps[0].argument == "Leonhard Euler"
    assert (result.explanation, result.language) == ("Die Abfrage liefert Eulers Doktorvater (P184).", "de")


def test_the_stop_carries_the_explanation_and_language(llm_server, kb):
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY),
                         ToolCallReply("stop", {"thought": "fertig", "explanation": "Die Abfrage liefert P184.",
                                                "language": "de"})])
    result = make_agent(server, kb).run("Wer war Eulers Doktorvater?")
    assert (result.explanation, result.language, result.best_effort) == ("Die Abfrage liefert P184.", "de", False)
    assert {"explanation", "language"} <= set(
        next(tool for tool in server.requests[0]["tools"] if tool["function"]["name"] == "stop")
        ["function"]["parameters"]["required"])


def test_a_run_at_its_budget_gets_an_extraction_call_and_a_best_effort_answer(llm_server, kb):
    def script(body):
        if "tools" not in body:
            assert body["temperature"] == 0.0 and "Trace:" in body["messages"][0]["content"]
            return TextReply(json.dumps({"sparql": EULER_ADVISORS_QUERY, "explanation": "Best effort: P184.",
                                         "language": "en"}))
        step = sum(message["role"] == "tool" for message in body["messages"])
        return call("search_wikidata", f"term {step}")

    server = llm_server(script)
    result = make_agent(server, kb, max_path_actions=3).run("Who advised Euler?")
    assert result.stop_reason == "path_limit" and result.best_effort
    assert result.final_sparql == EULER_ADVISORS_QUERY and result.end_of_run == ["extraction"]
    assert result.answer[0]["advisor"]["value"].endswith("Q124500")
    # The trace never showed Q7604 or P184: before the run ends the model reads what they are, and keeps them.
    assert result.final_unseen_ids == ["Q7604", "P184"] and result.id_checks == 1
    check = server.requests[-1]["messages"]
    assert len(check) == 3 and "Q7604 = Leonhard Euler — Swiss mathematician" in check[-1]["content"]
    assert "P184 = doctoral advisor [wikibase-item]" in check[-1]["content"]
    assert result.explanation == "Best effort: P184." and result.usage.llm_calls == 5


def test_the_final_query_is_the_one_the_model_wrote(llm_server, wikidata_server):
    label_only = ("SELECT ?advisorLabel WHERE { wd:Q7604 wdt:P184 ?advisor . SERVICE wikibase:label "
                  '{ bd:serviceParam wikibase:language "en". } } LIMIT 10')
    wikidata = wikidata_server(sparql={label_only: select(["advisorLabel"], [{"advisorLabel": "Johann Bernoulli"}])})
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01))
    server = llm_server([call("execute_sparql", label_only), call("stop")])
    result = make_agent(server, kb).run("Did Leonhard Euler have a doctoral advisor?")
    # No ?advisor beside the label, no DISTINCT, its LIMIT kept, no ASK made for the yes/no question.
    assert result.final_sparql == label_only and result.end_of_run == [] and not result.best_effort
    assert [r["params"]["query"] for r in wikidata.requests if r["path"] == "/sparql"] == [label_only]


def test_the_policy_asks_the_model_for_the_answers_form(llm_server, kb):
    server = llm_server([call("stop")])
    make_agent(server, kb, max_total_actions=1).run("Did Leonhard Euler have a doctoral advisor?")
    policy = server.requests[0]["messages"][0]["content"]
    assert "ASK for yes/no" in policy and "COUNT for how many" in policy and "YEAR() for which year" in policy
    assert "DISTINCT" in policy and "a request for a list or query gets that query" in policy


def test_the_model_can_end_a_run_saying_wikidata_cannot_answer_it(llm_server, kb):
    why = "Wikidata has no statement on Euler's favourite food; I searched Euler and read his entry."
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("get_wikidata_entry", "Q7604"),
                         ToolCallReply("stop", {"explanation": why, "language": "en", "cannot_answer": True})])
    result = make_agent(server, kb).run("What was Leonhard Euler's favourite food?")
    assert result.stop_reason == "cannot_answer" and result.final_sparql is None and result.answer is None
    assert (result.explanation, result.language, result.best_effort) == (why, "en", False)
    assert len(server.requests) == 3  # no extraction call second-guesses the model
    stop = next(tool for tool in server.requests[0]["tools"] if tool["function"]["name"] == "stop")
    assert stop["function"]["parameters"]["properties"]["cannot_answer"] == {"type": "boolean"}
    assert "cannot_answer" not in stop["function"]["parameters"]["required"]
    assert "stop with cannot_answer" in server.requests[0]["messages"][0]["content"]  # the forum's policy
    assert AgentResult.from_dict(json.loads(json.dumps(result.to_dict()))) == result


def test_cannot_answer_in_the_text_protocol(llm_server, kb):
    server = llm_server([
        TextReply('Thought: look\nAction: search_wikidata("Euler favourite food")'),
        TextReply("Thought: nothing there\nExplanation: Keine Aussage dazu in Wikidata.\nLanguage: de\n"
                  "Cannot answer: yes\nAction: stop()"),
    ], supports_tools=False)
    result = make_agent(server, kb).run("Was aß Euler am liebsten?")
    assert result.stop_reason == "cannot_answer" and result.final_sparql is None
    assert (result.explanation, result.language) == ("Keine Aussage dazu in Wikidata.", "de")
    assert 'Cannot answer: yes' in server.requests[-1]["messages"][0]["content"]


WRONG_ID_QUERY = "SELECT ?advisor WHERE { wd:Q7605 wdt:P184 ?advisor . }"


def test_a_wrong_id_typed_from_memory_is_named_and_the_model_corrects_itself(llm_server, wikidata_server):
    wikidata = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    wikidata.add(*euler_entities())
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01))

    def model(body):
        seen = [message["content"] for message in body["messages"] if message["role"] == "tool"]
        if not seen:
            return call("execute_sparql", WRONG_ID_QUERY, "Euler is Q7605, I believe.")
        if "Q7605 = Euler (crater)" in seen[-1]:
            return call("execute_sparql", EULER_ADVISORS_QUERY, "Q7605 is a crater; the mathematician is Q7604.")
        return call("stop", thought="done")

    server = llm_server(model)
    result = make_agent(server, kb).run("Who were the doctoral advisors of Leonhard Euler?")
    wrong, right = result.steps[0], result.steps[1]
    assert wrong.unseen_ids == ["Q7605", "P184"] and wrong.query_status == "empty"
    assert wrong.observation.endswith("Q7605 = Euler (crater) — lunar crater; P184 = doctoral advisor "
                                      "[wikibase-item].")
    assert right.unseen_ids == ["Q7604"] and "Q7604 = Leonhard Euler" in right.observation  # P184 was named
    assert result.final_sparql == EULER_ADVISORS_QUERY and result.answer[0]["advisor"]["value"].endswith("Q124500")
    assert result.id_checks == 2 and AgentResult.from_dict(result.to_dict()).id_checks == 2
    # One wbgetentities call per check, for just the new IDs; no model call.
    lookups = [r["params"]["ids"] for r in wikidata.requests if r["params"].get("action") == "wbgetentities"]
    assert lookups == ["Q7605|P184", "Q7604"] and len(server.requests) == 3


def test_ids_the_run_has_shown_are_not_named_again(llm_server, kb):
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("get_property_examples", "P184"),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.steps[2].unseen_ids == [] and "new to this run" not in result.steps[2].observation
    assert result.id_checks == 0


SCHOLARLY_PLAIN = "SELECT ?author WHERE { wd:Q60133667 wdt:P50 ?author }"
SCHOLARLY_FEDERATED = ("SELECT ?author WHERE { SERVICE wdsubgraph:scholarly_articles "
                       "{ wd:Q60133667 wdt:P50 ?author } }")


def test_scholarly_articles_are_marked_and_reached_through_federation(llm_server, wikidata_server):
    def graph_split(query):
        # Since May 2025 the main graph holds no scholarly article; the federated service does.
        if "Q60133667" in query and "wdsubgraph:scholarly_articles" not in query:
            return select(["author"], [])
        return select(["author"], [{"author": "Q1001"}])

    wikidata = wikidata_server(sparql=graph_split)
    wikidata.add(entity("Q60133667", "Riemannian Geometry", "scientific article published in Nature"))
    kb = LiveWikidata(WikidataConfig(api_url=wikidata.api_url, sparql_url=wikidata.sparql_url),
                      http=HttpClient(backoff=0.01))
    server = llm_server([call("search_wikidata", "Riemannian Geometry"), call("execute_sparql", SCHOLARLY_PLAIN),
                         call("execute_sparql", SCHOLARLY_FEDERATED), call("stop")])
    result = make_agent(server, kb).run("Who wrote the Nature article Riemannian Geometry?")
    assert "[scholarly graph]" in result.steps[0].observation
    assert "SERVICE wdsubgraph:scholarly_articles" in server.requests[0]["messages"][0]["content"]
    assert result.steps[1].query_status == "empty" and result.steps[2].query_status == "ok"
    assert result.stop_reason == "stop" and "wdsubgraph:scholarly_articles" in result.final_sparql
    other = llm_server([call("stop")])
    make_agent(other, kb, scholarly_service="", max_total_actions=1).run("q")
    assert "scholarly" not in other.requests[0]["messages"][0]["content"]


def test_the_models_free_text_is_kept_as_the_thought(llm_server, kb):
    server = llm_server([ToolCallReply("execute_sparql", {"thought": "", "sparql": EULER_ADVISORS_QUERY},
                                       content="Euler's advisor is in P184; run it."), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.steps[0].thought == "Euler's advisor is in P184; run it."


def test_a_tool_name_holding_a_lone_surrogate_is_a_step_error_and_the_next_request_is_sent(llm_server, kb):
    server = llm_server([ToolCallReply("execute_sparql\ud800", {"thought": "x", "sparql": EULER_ADVISORS_QUERY}),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert "Unknown action" in result.steps[0].observation and result.steps[0].action == "execute_sparql\ufffd"
    assert result.stop_reason == "stop" and len(server.requests) == 3


def test_a_lone_surrogate_from_the_model_never_breaks_the_run(llm_server, kb):
    server = llm_server([
        call("execute_sparql", EULER_ADVISORS_QUERY, "Query the advisors \ud800 now."),
        ToolCallReply("stop", {"thought": "Done \udfff.", "explanation": "Euler's advisors \ud83d.",
                               "language": "en"}),
    ])
    result = make_agent(server, kb).run("Who were the doctoral advisors of Leonhard Euler?")
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY
    assert result.steps[0].thought == "Query the advisors \ufffd now."
    assert result.explanation == "Euler's advisors \ufffd."
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")  # storable and postable as UTF-8


def test_a_lone_surrogate_in_what_wikidata_answers_reaches_the_model_as_a_replacement_character(llm_server,
                                                                                               wikidata_server):
    server = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor", "note"], [
        {"advisor": "Q124500", "note": {"type": "literal", "value": "tutor \udfff"}}])})
    server.add(*euler_entities(), entity("Q1", "Leonhard Euler \ud800", "a label with a lone surrogate \udc00"))
    kb = LiveWikidata(WikidataConfig(api_url=server.api_url, sparql_url=server.sparql_url),
                      http=HttpClient(backoff=0.01))
    llm = llm_server([call("search_wikidata", "Leonhard Euler"), call("execute_sparql", EULER_ADVISORS_QUERY),
                      call("stop")])
    result = make_agent(llm, kb).run("Who were the doctoral advisors of Leonhard Euler?")
    assert result.stop_reason == "stop" and len(llm.requests) == 3
    assert "Leonhard Euler \ufffd" in result.steps[0].observation and "tutor \ufffd" in result.steps[1].observation
    assert "a label with a lone surrogate \ufffd" in llm.requests[1]["messages"][-1]["content"]
    assert result.answer[0]["note"]["value"] == "tutor \ufffd"  # the answer's rows, too, are stored as UTF-8
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_search_text_longer_than_any_label_is_a_step_error_the_model_reads(llm_server, wikidata_server):
    server = wikidata_server(sparql={EULER_ADVISORS_QUERY: select(["advisor"], [{"advisor": "Q124500"}])})
    server.add(*euler_entities())
    kb = LiveWikidata(WikidataConfig(api_url=server.api_url, sparql_url=server.sparql_url),
                      http=HttpClient(backoff=0.01))
    llm = llm_server([call("search_wikidata", "E" * 1_000_000), call("execute_sparql", EULER_ADVISORS_QUERY),
                      call("stop")])
    result = make_agent(llm, kb).run("Who advised Euler?")
    assert result.stop_reason == "stop" and result.final_sparql == EULER_ADVISORS_QUERY
    assert result.steps[0].observation == ("search_wikidata looks up labels and aliases, which are at most 250 "
                                           "characters; this text has 1,000,000. Search for a name or a short "
                                           "phrase.")
    assert not [request for request in server.requests if request["params"].get("action") == "wbsearchentities"]
    assert len(json.dumps(llm.requests[1])) < 20_000  # the text is not carried into the next prompts


@pytest.mark.parametrize("body, content_type", [
    ("<html><body><h1>502 Bad Gateway</h1>nginx</body></html>", "text/html"),  # a proxy's page, sent as 200
    ('{"id": "x", "object": "chat.completion", "choices": [{"index": 0}]}', "application/json"),  # no message
    ('{"result": "ok"}', "application/json"),  # an object of another shape
    ("", "text/plain"),
], ids=["html page", "choice without message", "other json", "empty"])
def test_an_answer_that_is_no_chat_completion_ends_the_run_as_a_model_failure_in_one_line(llm_server, kb, body,
                                                                                          content_type):
    server = llm_server(lambda request: RawReply(body, content_type=content_type))
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "llm_error"
    assert result.stop_message.startswith("the endpoint's answer is not a chat completion")
    assert "\n" not in result.stop_message and len(result.stop_message) < 300
    assert "Traceback" not in result.stop_message and "attribute" not in result.stop_message


def test_a_model_that_runs_on_in_its_explanation_is_cut_where_a_reader_would_stop(llm_server, kb):
    endless = "The advisors are listed. " * 400_000  # 10 MB: shown whole, a page of 18 MB
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY),
                         ToolCallReply("stop", {"thought": "done", "explanation": endless, "language": "en"})])
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.final_sparql == EULER_ADVISORS_QUERY
    assert 10000 < len(result.explanation) <= 20000 and result.explanation.endswith("…")
    assert result.explanation[:-1].split()[-1] in endless.split()  # cut after a whole word
    assert result.explanation.startswith("The advisors are listed. The advisors")


def test_a_run_that_learns_nothing_new_ends_early_and_says_why(llm_server, kb):
    script = [call("search_wikidata", "Leonhard Euler")] + [call("search_wikidata", f"nothing here {i}")
                                                            for i in range(20)]
    server = llm_server(lambda body: script.pop(0) if "tools" in body else TextReply("{}"))
    result = make_agent(server, kb).run("Who advised Euler?")
    assert result.stop_reason == "no_progress" and len(result.steps) == 7  # the first search, then six that found
    assert result.stop_message.startswith("nothing new learnt in 6 steps in a row: search_wikidata(nothing here 0), "
                                          "search_wikidata(nothing here 1)")
    assert result.best_effort and "tools" not in server.requests[-1]  # the end of the run still asks for a query


def test_a_step_that_shows_something_new_starts_the_count_again(llm_server, kb):
    server = llm_server([call("search_wikidata", "Leonhard Euler"), call("search_wikidata", "nothing 1"),
                         call("get_wikidata_entry", "Q7604"), call("search_wikidata", "nothing 2"),
                         call("execute_sparql", EULER_ADVISORS_QUERY), call("search_wikidata", "nothing 3"),
                         call("search_wikidata", "nothing 4"), TextReply("{}")])
    result = make_agent(server, kb, max_steps_without_progress=2).run("Who advised Euler?")
    assert result.stop_reason == "no_progress" and len(result.steps) == 7
    assert result.stop_message == ("nothing new learnt in 2 steps in a row: search_wikidata(nothing 3), "
                                   "search_wikidata(nothing 4)")
    assert result.final_sparql == EULER_ADVISORS_QUERY  # the query that returned rows stands


def agent_with_time(server, kb, seconds, **config) -> Agent:
    llm = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", max_retries=0, timeout=600))
    return Agent(llm=llm, kb=kb, config=AgentConfig(max_seconds=seconds, **config))


def test_the_extraction_gets_what_remains_of_the_runs_time_not_a_timeout_of_its_own(llm_server, kb):
    endless = EndlessReply()
    server = llm_server(lambda body: call("search_wikidata", "Leonhard Euler") if "tools" in body else endless)
    result = agent_with_time(server, kb, 3, max_total_actions=1).run("Who advised Euler?")
    endless.release.set()
    assert result.stop_reason == "action_limit" and result.usage.llm_calls == 2  # the extraction is counted
    assert "; the end-of-run extraction gave nothing (time_limit: the run's 3 s are spent (no reply within " \
           in result.stop_message
    assert "s (what remained of the run's time); not asked again))" in result.stop_message


def test_a_run_that_spends_its_time_ends_with_its_own_reason_and_no_call_after(llm_server, kb):
    endless = EndlessReply()
    server = llm_server([endless])
    result = agent_with_time(server, kb, 1).run("Who advised Euler?")
    endless.release.set()
    assert result.stop_reason == "time_limit" and result.stop_message.startswith("the run's 1 s are spent (no reply")
    assert "the end-of-run extraction gave nothing (time_limit: the run's 1 s are spent)" in result.stop_message
    assert len(server.requests) == 1 and result.usage.llm_calls == 1


def test_every_step_request_of_a_run_starts_with_the_same_text_so_a_servers_prefix_cache_holds(llm_server, kb):
    script = [call("search_wikidata", "Leonhard Euler"), call("get_wikidata_entry", "Q7604"),
              call("execute_sparql", EULER_ADVISORS_QUERY), call("stop")]
    server = llm_server(lambda body: script.pop(0) if "tools" in body else TextReply("{}"))
    make_agent(server, kb, prune_threshold=300).run("Who advised Euler?")
    steps = [body for body in server.requests if "tools" in body]
    assert len(steps) == 4 and len(server.requests) == 5  # a pruning call between the second and third step
    first = json.dumps([steps[0]["tools"], steps[0]["messages"][:2]])
    assert all(json.dumps([body["tools"], body["messages"][:2]]) == first for body in steps[1:])


def test_a_query_held_past_the_runs_time_is_given_up_at_what_remained_and_the_run_ends(llm_server, wikidata_server):
    # The query service holds the query until the test lets it go: far past the run's time and the client's own
    # timeout (60 s); only a query given what remained of the run's time comes back before.
    arrived, release = threading.Event(), threading.Event()

    def held(query):
        arrived.set()
        release.wait(PATIENCE)
        return select(["advisor"], [{"advisor": "Q124500"}])

    service = wikidata_server(sparql=held)
    kb = LiveWikidata(WikidataConfig(api_url=service.api_url, sparql_url=service.sparql_url),
                      http=HttpClient(backoff=0.01))
    server = llm_server([call("execute_sparql", EULER_ADVISORS_QUERY)])
    try:
        result = agent_with_time(server, kb, 3).run("Who advised Euler?")
        assert not release.is_set()  # the run ended with the query still held: it was given up
    finally:
        release.set()
    [step] = result.steps
    assert arrived.is_set() and step.query_status == "timeout"
    given = float(re.search(r"no answer within (\S+) seconds", step.observation).group(1))
    assert 0 < given < 3  # what remained of the run's 3 s
    assert result.stop_reason == "time_limit" and result.stop_message.startswith("the run's 3 s are spent")
    assert "the end-of-run extraction gave nothing (time_limit: the run's 3 s are spent)" in result.stop_message
    assert len(server.requests) == 1 and result.usage.llm_calls == 1  # nothing sent once the time was spent
    assert result.usage.kb_calls == 1 and len([r for r in service.requests if r["path"] == "/sparql"]) == 1


def test_the_end_of_run_query_gets_what_remains_of_the_runs_time(llm_server, wikidata_server):
    # The query service would wait far longer than the run's 3 s (its client allows twice the test's patience):
    # the extraction's query is given up when the run's time is spent, before the service answers.
    arrived, answered, release = threading.Event(), threading.Event(), threading.Event()

    def held(query):
        arrived.set()
        release.wait(PATIENCE)
        answered.set()
        return select(["advisor"], [{"advisor": "Q124500"}])

    service = wikidata_server(sparql=held)
    service.add(*euler_entities())
    kb = LiveWikidata(WikidataConfig(api_url=service.api_url, sparql_url=service.sparql_url, timeout=2 * PATIENCE),
                      http=HttpClient(backoff=0.01))
    extraction = TextReply(json.dumps({"sparql": EULER_ADVISORS_QUERY, "explanation": "His advisors."}))
    server = llm_server(lambda body: call("search_wikidata", "Leonhard Euler") if "tools" in body else extraction)
    try:
        result = agent_with_time(server, kb, 3, max_total_actions=1).run("Who advised Euler?")
        assert arrived.is_set() and not answered.is_set()  # the run ended with its last query still held
    finally:
        release.set()
    assert result.stop_reason == "action_limit" and result.final_sparql is None and result.best_effort


@contextmanager
def held_searches(wikidata_server, **http) -> Iterator[tuple[LiveWikidata, Fault]]:
    """A knowledge base whose searches a proxy holds until the test is done with it, and the fault holding them
    (*http*: the client's settings)."""
    service = wikidata_server()
    service.add(*euler_entities())
    release = threading.Event()
    proxy = FaultProxy(service.base)
    held = proxy.add(Fault("held search", wiki_action("wbsearchentities"), lambda params: release.wait(PATIENCE)))
    try:
        yield LiveWikidata(WikidataConfig(api_url=proxy.url("/w/api.php"), sparql_url=service.sparql_url),
                           http=HttpClient(backoff=0.01, **http)), held
    finally:
        release.set()
        proxy.close()


def test_a_search_held_past_the_runs_time_is_cut_at_its_end(llm_server, wikidata_server):
    # The search is held until the test ends: far past the run's 3 s.
    server = llm_server([call("search_wikidata", "Leonhard Euler")])
    with held_searches(wikidata_server) as (kb, held):
        result = agent_with_time(server, kb, 3).run("Who advised Euler?")
        assert held.fired == 1  # the run ended with the search still held
    [step] = result.steps
    assert step.observation.startswith("The knowledge base could not be reached: ") and " s that were left" in \
        step.observation
    assert result.stop_reason == "time_limit" and result.stop_message.startswith("the run's 3 s are spent (")
    assert len(server.requests) == 1  # nothing sent once the time was spent


def test_a_search_the_wiki_does_not_answer_in_time_ends_the_run_as_a_knowledge_base_error(llm_server,
                                                                                           wikidata_server):
    # No run time limit: the search has the client's own timeout (1 s here) and the proxy holds it past that.
    server = llm_server([call("search_wikidata", "Leonhard Euler")])
    with held_searches(wikidata_server, timeout=1.0, max_retries=0) as (kb, held):
        result = Agent(ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="k")), kb).run(
            "Who advised Euler?")
        assert held.fired == 1
    [step] = result.steps
    assert step.observation.startswith("The knowledge base could not be reached: ") and "no answer within" in \
        step.observation
    assert result.stop_reason == "kb_error"
