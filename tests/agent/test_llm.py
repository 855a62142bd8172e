"""The model wrapper against the scripted OpenAI-compatible stand-in: streamed replies, the life of a request that
timed out, and the count of requests sent."""

import time

import pytest

from agent.llm import ChatModel, LLMConfig, LLMUnavailable, ToolChoiceRefused
from tests.support.llm_server import (EndlessReply, ErrorReply, FromHeaders, HeldReply, RawReply, TextReply,
                                      ToolCallReply)
from tests.support.processes import PATIENCE, wait_for

TOOLS = [{"type": "function", "function": {"name": "stop", "parameters": {"type": "object", "properties": {}}}}]
ASK = [{"role": "user", "content": "When was Douglas Adams born?"}]


def model(server, stream=False, timeout=5.0, max_retries=2) -> ChatModel:
    return ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="t", model=None, timeout=timeout,
                                           max_retries=max_retries, stream=stream))


def test_a_streamed_reply_is_assembled_whole_with_its_tool_call_and_usage(llm_server):
    arguments = {"thought": "the birth date is on his entry", "qid": "Q42"}
    server = llm_server([ToolCallReply("get_wikidata_entry", arguments, content="Let me look.")], model="smol")
    completion = model(server, stream=True).complete(ASK, temperature=0)
    assert server.requests[0]["stream"] is True and server.requests[0]["stream_options"] == {"include_usage": True}
    assert completion.content == "Let me look." and completion.model == "smol" and completion.attempts == 1
    [call] = completion.tool_calls
    assert call.name == "get_wikidata_entry" and call.arguments == '{"thought": "the birth date is on his entry", ' \
                                                                   '"qid": "Q42"}'
    assert completion.prompt_tokens > 0 and completion.completion_tokens > 0


def test_a_request_with_tools_is_sent_whole_even_when_replies_are_streamed(llm_server):
    # llama-cpp-python's tool-calling format fails a streamed tool call after its answer has begun.
    server = llm_server([ToolCallReply("stop", {})])
    completion = model(server, stream=True).complete(ASK, temperature=0, tools=TOOLS)
    assert "stream" not in server.requests[0] and completion.tool_calls[0].name == "stop"


@pytest.mark.parametrize("reply, message", [
    (ErrorReply(400, body={"error": {"message": "bad", "type": "BadRequestError"}}), "the endpoint refused"),
    (RawReply("<html><body>Bad gateway</body></html>"), r"not a chat completion \(text/html; charset=utf-8, "
                                                              r"not a stream of events\): <html><body>Bad gateway"),
])
def test_a_streamed_request_fails_in_one_line_as_a_whole_one_does(llm_server, reply, message):
    server = llm_server([reply])
    with pytest.raises(LLMUnavailable, match=message) as failed:
        model(server, stream=True).complete(ASK, temperature=0)
    assert failed.value.attempts == 1 and "\n" not in str(failed.value)


def test_a_held_streamed_request_is_answered_once_released(llm_server):
    held = HeldReply(TextReply("1952-03-11"))
    server = llm_server([held])
    held.release.set()
    assert model(server, stream=True).complete(ASK, temperature=0).content == "1952-03-11"


def test_a_streamed_request_that_times_out_is_closed_and_the_server_stops_generating(llm_server):
    endless = EndlessReply()
    server = llm_server([endless, TextReply("1952-03-11")], one_at_a_time=True)
    llm = model(server, stream=True, timeout=0.5)
    with pytest.raises(LLMUnavailable, match=r"no reply within 0.5 s \(the model's timeout\); not asked again"):
        llm.complete(ASK, temperature=0)
    wait_for(endless.noticed.is_set, PATIENCE, "the stand-in to notice the closed request")
    assert not endless.release.is_set()  # it stopped because the request went, not because the test said so
    # The next request is sent once the endpoint answers again, and is answered.
    assert llm.complete(ASK, temperature=0).content == "1952-03-11"
    assert server.model_lists >= 1 and len(server.requests) == 2


def test_after_a_timeout_the_next_request_is_not_sent_into_a_busy_server(llm_server):
    # Not streamed: the server goes on generating the abandoned reply, as llama-cpp-python's does.
    endless = EndlessReply()
    server = llm_server([endless, TextReply("1952-03-11")], one_at_a_time=True)
    llm = model(server, timeout=0.5)
    with pytest.raises(LLMUnavailable, match="no reply within 0.5 s"):
        llm.complete(ASK, temperature=0)
    with pytest.raises(LLMUnavailable, match=r"the endpoint is still busy with a request that timed out "
                                             r"\(no answer to GET /models within 0.5 s\); nothing was sent") as busy:
        llm.complete(ASK, temperature=0)
    assert busy.value.attempts == 0 and len(server.requests) == 1 and not endless.noticed.is_set()
    endless.release.set()  # the abandoned generation ends
    wait_for(endless.finished.is_set, PATIENCE, "the abandoned generation to end")
    assert llm.complete(ASK, temperature=0).content == "1952-03-11"
    assert len(server.requests) == 2 and not llm.abandoned


@pytest.mark.parametrize("stream", [False, True])
def test_the_wait_for_a_busy_server_is_taken_from_the_calls_time(llm_server, stream):
    # The read timeout the client gives a request is in the ``X-Stainless-Read-Timeout`` header it sends.
    timeouts = []

    def answer(headers):
        timeouts.append(float(headers["X-Stainless-Read-Timeout"]))
        return TextReply("1952-03-11")

    endless = EndlessReply()
    server = llm_server([endless, FromHeaders(answer)], one_at_a_time=True)
    llm = model(server, stream=stream, timeout=60)
    with pytest.raises(LLMUnavailable, match="no reply within 0.5 s"):
        llm.complete(ASK, temperature=0, timeout=0.5)
    endless.release.set()  # the abandoned generation ends; the next call waits for the server to say so
    assert llm.complete(ASK, temperature=0, timeout=30).content == "1952-03-11"
    assert server.model_lists >= 1 and 0 < timeouts[0] < 30  # 30 s for the wait and the request together


def test_without_a_timeout_nothing_is_asked_before_a_request(llm_server):
    server = llm_server([TextReply("a"), TextReply("b")])
    llm = model(server)
    llm.resolve_model()
    lists = server.model_lists
    llm.complete(ASK, temperature=0)
    llm.complete(ASK, temperature=0)
    assert server.model_lists == lists


def test_a_shorter_timeout_given_to_one_call_wins_and_says_whose_it_is(llm_server):
    endless = EndlessReply()
    server = llm_server([endless])
    with pytest.raises(LLMUnavailable, match=r"no reply within 0.5 s \(what remained of the run's time\)"):
        model(server, stream=True, timeout=60).complete(ASK, temperature=0, timeout=0.5)
    wait_for(endless.noticed.is_set, PATIENCE, "the stand-in to notice the closed request")


@pytest.mark.parametrize("stream", [False, True])
def test_every_request_sent_is_counted_retries_included(llm_server, stream):
    server = llm_server([ErrorReply(503, retry_after=0), ErrorReply(503, retry_after=0), TextReply("ok"),
                         ErrorReply(500), ErrorReply(500), ErrorReply(500)])
    llm = model(server, stream=stream)
    assert llm.complete(ASK, temperature=0).attempts == 3
    with pytest.raises(LLMUnavailable) as failed:
        llm.complete(ASK, temperature=0)
    assert failed.value.attempts == 3 and len(server.requests) == 6


def test_a_refused_first_request_and_a_timed_out_one_are_counted(llm_server):
    server = llm_server([TextReply("ok")], accepts_required=False)
    with pytest.raises(ToolChoiceRefused) as refused:
        model(server).complete(ASK, temperature=0, tools=TOOLS, probe=True)
    assert refused.value.attempts == 1
    endless = EndlessReply()
    server = llm_server([endless])
    with pytest.raises(LLMUnavailable) as timed_out:
        model(server, timeout=0.5).complete(ASK, temperature=0)
    endless.release.set()
    assert timed_out.value.attempts == 1


@pytest.mark.parametrize("probe", [True, False], ids=["first request of its kind", "later request"])
def test_a_busy_endpoints_wait_that_would_outlast_the_runs_time_is_not_waited(llm_server, probe):
    """An endpoint at its rate limit asks for 30 s; the run has 3 s left: the call fails at once as busy, and the
    request is not sent again after a sleep the run could not use.  (With time enough the wait is honoured:
    tests/agent/test_loop.py::test_rate_limit_is_retried_after_the_wait_the_endpoint_asks.)"""
    from agent.kb.http import deadline

    server = llm_server([ErrorReply(429, "rate limited", retry_after=30), TextReply("1952-03-11")])
    with deadline(time.monotonic() + 3):
        with pytest.raises(LLMUnavailable, match=r"the endpoint is busy \(HTTP 429, come back in 30 s\): rate "
                                                 "limited") as failed:
            model(server, max_retries=4).complete(ASK, temperature=0, timeout=3, tools=TOOLS, probe=probe)
    assert len(server.requests) == 1 and failed.value.attempts == 1
