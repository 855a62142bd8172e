"""A model request under a :class:`~agent.llm.CallGuard` is closed at once when its run is stopped.

The real ``openai`` client talks to the scripted stand-in on loopback; the
stand-in records a held request whose client closed the connection.
"""

from __future__ import annotations

import threading

import pytest

from agent.llm import CallGuard, ChatModel, Interrupted, LLMConfig
from tests.support.llm_server import HeldReply, ToolCallReply
from tests.support.processes import PATIENCE, wait_for

MESSAGES = [{"role": "user", "content": "Question: which?"}]
REPLY = ToolCallReply("stop", {"thought": "done"})


def _model(server) -> ChatModel:
    """The model as the service makes it; no model named, so the endpoint is asked which it serves (an unguarded
    request, whose connection the client's pool keeps)."""
    model = ChatModel.from_config(LLMConfig(base_url=server.base_url, api_key="k", model=None))
    assert model.resolve_model() == "scripted-stand-in"
    return model


def test_a_held_request_is_closed_at_once_and_not_asked_again(llm_server):
    held = HeldReply(REPLY)
    server = llm_server([held])
    model, guard = _model(server), CallGuard()
    raised: list[BaseException] = []

    def work() -> None:
        with guard.installed():
            try:
                model.complete(MESSAGES, temperature=0)
            except BaseException as error:  # what the run gets, whatever it is
                raised.append(error)

    worker = threading.Thread(target=work)
    worker.start()
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
