"""The chat page's routes: the page, the graphs served, a question in, and its run's events as they happen.

``POST /chat/runs`` admits a run and starts it at once; the page then opens
``GET /chat/runs/{id}/events`` (server-sent events) and reads ``accepted``,
``started`` once a worker takes the run, one ``step`` per step as the agent takes it, then ``final`` (or ``failed``)
and ``end``.  Events that happened before the page connected are sent
first.  A run whose page does not connect within :data:`CONNECT_SECONDS`,
or goes away before the end, is cancelled.  A run's events can be read
once: a second connection (a browser's automatic reconnection) gets a 404,
which ends it, so no question is asked twice.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse

from agent import Step
from serve.conversations import Conversation, Turn
from serve.events import final_event, step_event
from serve.graphs import ServedGraph
from serve.runs import Busy, RunPool, Ticket

log = logging.getLogger(__name__)

router = APIRouter()

#: Seconds a started run waits for its page to connect before it is cancelled.
CONNECT_SECONDS = 30.0
#: The page loads nothing from elsewhere and runs only its own script file: markup slipped into it could not run.
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
               "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: The longest question accepted, in characters.
QUESTION_CHARS = 2000


class Ask(BaseModel):
    question: str = Field(min_length=1, max_length=QUESTION_CHARS)
    graph: str
    #: The conversation a follow-up continues; none for a new one.
    conversation: str | None = None


@dataclass
class ChatRun:
    """One question's run and the events it has produced so far."""

    id: str
    ticket: Ticket
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False
    connected: bool = False

    def push(self, name: str, data: dict[str, Any]) -> None:
        self.events.append((name, data))
        self.changed.set()


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


@router.get("/", response_class=HTMLResponse)
async def page() -> HTMLResponse:
    return HTMLResponse(resources.files("serve").joinpath("static/chat.html").read_text(encoding="utf-8"),
                        headers={"Content-Security-Policy": PAGE_POLICY})


@router.get("/chat/graphs")
async def graphs(request: Request) -> list[dict[str, str]]:
    return [{"name": graph.name, "title": graph.title} for graph in request.app.state.graphs.values()]


@router.post("/chat/runs")
async def ask(request: Request, asked: Ask) -> JSONResponse:
    graph: ServedGraph | None = request.app.state.graphs.get(asked.graph)
    if graph is None:
        return JSONResponse({"detail": f"no graph named {asked.graph!r} is served"}, status_code=404)
    conversations = request.app.state.conversations
    if asked.conversation:
        conversation = conversations.get(asked.conversation)
        if conversation is None:
            return JSONResponse({"detail": "this conversation is over (the server forgot it); start a new one"},
                                status_code=404)
        if conversation.graph != graph.name:
            return JSONResponse({"detail": f"this conversation is about {conversation.graph}; start a new one "
                                           f"to ask about {graph.name}"}, status_code=409)
        if conversation.busy:
            return JSONResponse({"detail": "this conversation is still answering its last question"},
                                status_code=409)
    else:
        conversation = None
    pool: RunPool = request.app.state.pool
    try:
        ticket = pool.admit(_client(request))
    except Busy as busy:
        log.info("chat: refused (%s) for %s: %s", busy.status, _client(request), busy.message)
        return JSONResponse({"detail": busy.message}, status_code=busy.status,
                            headers={"Retry-After": str(busy.retry_after)})
    conversation = conversation or conversations.start(graph.name)
    conversation.busy = True
    run = ChatRun(secrets.token_urlsafe(16), ticket)
    request.app.state.chat_runs[run.id] = run
    run.push("accepted", {"graph": graph.title})
    asyncio.get_running_loop().call_later(CONNECT_SECONDS, _cancel_unwatched, run)
    task = asyncio.create_task(_drive(request.app.state, run, graph, conversation, asked.question))
    request.app.state.tasks.add(task)  # the loop keeps only a weak reference to a task
    task.add_done_callback(request.app.state.tasks.discard)
    return JSONResponse({"run": run.id, "conversation": conversation.id})


def _cancel_unwatched(run: ChatRun) -> None:
    if not run.connected and not run.finished:
        log.info("chat: run %s cancelled: its page did not connect", run.id)
        run.ticket.cancel()


async def _drive(state: Any, run: ChatRun, graph: ServedGraph, conversation: Conversation, question: str) -> None:
    """Run the agent, pushing each step to *run* as the worker takes it, then the answer."""
    loop = asyncio.get_running_loop()
    numbers = itertools.count(1)

    def on_step(step: Step) -> None:  # in the worker thread
        event = step_event(next(numbers), step)
        loop.call_soon_threadsafe(run.push, "step", event)

    try:
        result = await state.pool.run(run.ticket, graph, question, conversation.context(), on_step=on_step,
                                      on_start=lambda: loop.call_soon_threadsafe(run.push, "started", {}))
        if result is None:
            run.push("failed", {"message": "The question was cancelled."})
        else:
            final = final_event(result, graph)
            conversation.turns.append(Turn(question, result.final_sparql or "", result.explanation))
            run.push("final", final)
            log.info("chat: %s: %s after %d steps", graph.name, result.stop_reason, len(result.steps))
    except TimeoutError:
        log.warning("chat: %s: no answer within %.0f s", graph.name, state.pool.limits.timeout)
        run.push("failed", {"message": f"No answer within {state.pool.limits.timeout:.0f} seconds."})
    except Exception:  # our own error: logged whole here, a plain sentence on the page
        log.exception("chat: the run failed")
        run.push("failed", {"message": "The server failed to answer; the error is in its log."})
    finally:
        conversation.busy = False
        run.finished = True
        run.push("end", {})
        loop.call_later(CONNECT_SECONDS, state.chat_runs.pop, run.id, None)


@router.get("/chat/runs/{run_id}/events")
async def events(request: Request, run_id: str) -> Response:
    run: ChatRun | None = request.app.state.chat_runs.get(run_id)
    if run is None or run.connected:
        return JSONResponse({"detail": "no such run, or its events were read already"}, status_code=404)
    run.connected = True
    return EventSourceResponse(_stream(run), ping=15)


async def _stream(run: ChatRun) -> AsyncIterator[dict[str, str]]:
    sent = 0
    try:
        while True:
            run.changed.clear()
            while sent < len(run.events):
                name, data = run.events[sent]
                sent += 1
                yield {"event": name, "data": json.dumps(data, ensure_ascii=False)}
            if run.finished:
                return
            await run.changed.wait()
    finally:
        if not run.finished:
            log.info("chat: run %s cancelled: its page went away", run.id)
            run.ticket.cancel()
