"""A model request under a :class:`~agent.llm.CallGuard` is closed at once when its run is stopped.

The real ``openai`` client talks to the scripted stand-in on loopback; the
stand-in records a held request whose client closed the connection.
"""

from __future__ import annotations

import threading

import pytest

from agent.llm import CallGuard, ChatModel, Interrupted, LLMConfig, LLMUnavailable
from tests.support.llm_server import EndlessReply, HeldReply, TextReply, ToolCallReply
from tests.support.processes import PATIENCE, wait_for

MESSAGES = [{"role": "user", "content": "Question: which?"}]
REPLY = ToolCallReply("stop", {"thought": "done"})


def _model(server) -> ChatModel:
    """The model as the service makes it; no model named, so the endpoint is asked which it serves (an unguarded
    request, whose connection the client's pool keeps)."""
    model = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="k", model=None))
    assert model.resolve_model() == "scripted-stand-in"
    return model


def asked_in_a_worker(model: ChatModel, guard: CallGuard) -> tuple[threading.Thread, list[BaseException]]:
    """One request sent under *guard* from a thread of its own, as a run sends it: the thread, started, and what
    the request raised (whatever it is), once it has."""
    raised: list[BaseException] = []

    def work() -> None:
        with guard.installed():
            try:
                model.complete(MESSAGES, temperature=0)
            except BaseException as error:  # what the run gets, whatever it is
                raised.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    return worker, raised


def test_a_held_request_is_closed_at_once_and_not_asked_again(llm_server):
    held = HeldReply(REPLY)
    server = llm_server([held])
    model, guard = _model(server), CallGuard()
    worker, raised = asked_in_a_worker(model, guard)
    try:
        wait_for(held.arrived.is_set, PATIENCE, "the request reaching the model")
        assert guard.interrupt() is True
        wait_for(held.closed.is_set, PATIENCE, "the model seeing its connection closed")
        worker.join(PATIENCE)
    finally:
        held.release.set()
    assert [type(error) for error in raised] == [Interrupted] and guard.closed_request
    assert len(server.requests) == 1, "the closed request was sent again"


def test_a_guard_stopped_between_requests_closes_nothing_and_sends_no_more(llm_server):
    server = llm_server([REPLY, REPLY, REPLY])
    model, guard = _model(server), CallGuard()
    with guard.installed():
        model.complete(MESSAGES, temperature=0)
        model.complete(MESSAGES, temperature=0)
        assert guard.interrupt() is False and not guard.closed_request
        with pytest.raises(Interrupted):
            model.complete(MESSAGES, temperature=0)
    assert len(server.requests) == 2
    model.complete(MESSAGES, temperature=0)  # outside the guard: the run that stopped was the guard's alone
    assert len(server.requests) == 3


@pytest.mark.parametrize("stream", [False, True])
def test_a_request_closed_by_a_stop_holds_the_next_one_until_the_server_is_idle(llm_server, stream):
    # The stand-in serves one completion at a time, as llama-cpp-python's server does: not streamed, it goes on
    # generating the closed request's reply; streamed, it stops at the next chunk it cannot send.
    endless = EndlessReply()
    server = llm_server([endless, TextReply("1952-03-11")], one_at_a_time=True)
    model = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="k", stream=stream, timeout=60))
    guard = CallGuard()
    worker, raised = asked_in_a_worker(model, guard)
    try:
        wait_for(endless.arrived.is_set, PATIENCE, "the request reaching the model")
        guard.interrupt()
        worker.join(PATIENCE)
        assert [type(error) for error in raised] == [Interrupted] and model.abandoned
        lists = server.model_lists
        if not stream:  # the server is still busy with the closed request: the next one is not sent into it
            with pytest.raises(LLMUnavailable, match=r"the endpoint is still busy .* nothing was sent"):
                model.complete(MESSAGES, temperature=0, timeout=0.5)
            assert len(server.requests) == 1 and not endless.noticed.is_set()
    finally:
        endless.release.set()
    wait_for(endless.finished.is_set, PATIENCE, "the closed request's generation to end")
    assert model.complete(MESSAGES, temperature=0).content == "1952-03-11"
    assert server.model_lists > lists and not model.abandoned  # it asked whether the server was idle first
    assert len(server.requests) == 2


def test_a_stop_before_the_request_was_sent_leaves_the_server_as_it_was(llm_server):
    server = llm_server([REPLY, REPLY])
    model, guard = _model(server), CallGuard()
    guard.interrupt()
    with guard.installed(), pytest.raises(Interrupted):
        model.complete(MESSAGES, temperature=0)
    assert not model.abandoned
    lists = server.model_lists
    model.complete(MESSAGES, temperature=0)
    assert server.model_lists == lists  # sent at once: nothing had kept the server busy
