"""The TEXT2SPARQL API: ``GET /text2sparql?question=…&dataset=…`` answers ``{"dataset", "question", "query"}``.

As the challenge's endpoint does (its official client, ``text2sparql-client``,
asks one question at a time and reads those three fields): a missing
parameter is a 422 (FastAPI's validation body), a dataset the server does not
serve a 404.  The agent runs with ``answer_guaranteed`` (every question of a
benchmark has an answer).  A question the graph cannot answer is still
answered with a query, :data:`NO_ANSWER_QUERY`, whose result is empty, so it
is scored as an empty answer.

A question gets its answer within the answer deadline (``--answer-within``,
below the client's read timeout): a run still going then is stopped, and the
answer is its best query so far, the last one it ran that returned rows (the
challenge scores a question the client skips as 0, so a query that found
something is never worse).  A run that has no such query by then is a 504: it
found nothing, and an empty query would claim it had judged the question.
The client reads a 504, as every error status, as no answer and skips the
question without asking again, which scores as an empty answer does.

A model or knowledge base that failed is a 503 with ``Retry-After``, a full
queue a 503 and a client over its share a 429: each a JSON ``detail`` and one
log line, never a traceback.  A client that closes its connection before its
answer stops its run (:func:`unless_gone`): nobody waits for it, its model
request is closed at once, and its worker is free for the next question.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TypeVar

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from agent.examples.queries import shorten_text
from agent.trace import SERVICE_FAILURES
from serve.runs import Busy, RunPool, StopCause, Ticket

log = logging.getLogger(__name__)

router = APIRouter()

#: How often a running question looks whether its client is still connected.
DISCONNECT_POLL_SECONDS = 0.5
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed its connection before its answer: nobody waits for the run."""


async def unless_gone(request: Request, work: Awaitable[T], ticket: Ticket) -> T:
    """*work*'s result, unless *request*'s client goes away first: then its run is stopped (its model request
    closed, the worker free) and :class:`ClientGone` is raised."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
        if done:
            return task.result()
        if await request.is_disconnected():
            ticket.cancel(StopCause.CLIENT_GONE)
            task.cancel()
            raise ClientGone()


#: The answer to a question the graph cannot answer: a query with no solutions, valid on any SPARQL 1.1 engine.
NO_ANSWER_QUERY = "SELECT * WHERE { FILTER(false) }"


class Text2SparqlAnswer(BaseModel):
    dataset: str
    question: str
    query: str


def _error(status: int, detail: str, retry_after: int | None = None) -> JSONResponse:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


@router.get("/text2sparql", response_model=Text2SparqlAnswer,
            responses={404: {"description": "a dataset this server does not serve"},
                       429: {"description": "this client has too many questions running"},
                       503: {"description": "the queue is full, or the model or the graph failed; see Retry-After"},
                       504: {"description": "no query within the server's time limit"}})
async def text2sparql(request: Request, question: str = Query(min_length=1), dataset: str = Query(min_length=1)):
    """The SPARQL query that answers *question* on the graph the dataset IRI *dataset* names."""
    graph = request.app.state.datasets.get(dataset)
    if graph is None:
        log.info("text2sparql: unknown dataset %s", dataset)
        return _error(404, f"unknown dataset {dataset}; this server answers about: "
                           f"{', '.join(request.app.state.datasets) or 'no dataset'}")
    pool: RunPool = request.app.state.pool
    client = request.client.host if request.client else "?"
    started = time.monotonic()
    try:
        ticket = pool.admit(client)
    except Busy as busy:
        log.info("text2sparql: refused (%s) for %s: %s", busy.status, client, busy.message)
        return _error(busy.status, busy.message, busy.retry_after)
    ticket.answer_by(started + pool.limits.answer_within)
    logged = shorten_text(question, 200)  # short, its spaces as spaces; the log escapes what could forge a line
    try:
        result = await unless_gone(request, pool.run(ticket, graph, question, answer_guaranteed=True), ticket)
    except TimeoutError:
        return _out_of_time(pool, ticket, graph.name, dataset, question)
    except ClientGone:
        log.info("text2sparql: %s: the client went away after %.1f s; its run is stopped: %s", graph.name,
                 time.monotonic() - started, logged)
        return _error(499, "the client closed the connection")
    seconds = time.monotonic() - started
    if result is None:  # stopped by its deadline between the last step and the answer
        return _out_of_time(pool, ticket, graph.name, dataset, question)
    if result.stop_reason in SERVICE_FAILURES:
        log.warning("text2sparql: %s: %s after %.1f s (%s): %s", graph.name, result.stop_reason, seconds,
                    shorten_text(result.stop_message, 300), logged)
        return _error(503, "the language model or the knowledge graph failed; ask again later", 30)
    query = result.final_sparql or NO_ANSWER_QUERY
    log.info("text2sparql: %s: %s in %.1f s%s: %s", graph.name, result.stop_reason, seconds,
             "" if result.final_sparql else " (no query: answered with an empty one)", logged)
    return Text2SparqlAnswer(dataset=dataset, question=question, query=query)


def _out_of_time(pool: RunPool, ticket: Ticket, name: str, dataset: str, question: str
                 ) -> Text2SparqlAnswer | JSONResponse:
    """The answer of a run stopped at its deadline: its best query so far, or a 504 when it has none."""
    limit = min(pool.limits.timeout, pool.limits.answer_within)
    logged = shorten_text(question, 200)
    query = ticket.best_query()
    if query is None:
        log.warning("text2sparql: %s: no query within %.0f s: %s", name, limit, logged)
        return _error(504, f"no query within {limit:.0f} s")
    taken = len(ticket.steps)
    log.warning("text2sparql: %s: out of time after %d step%s; answered with its best query so far: %s", name,
                taken, "" if taken == 1 else "s", logged)
    return Text2SparqlAnswer(dataset=dataset, question=question, query=query)
