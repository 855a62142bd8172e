"""The web application: the TEXT2SPARQL API, the chat page and its static files, on one pool of agent runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from agent.llm import ChatModel
from serve import chat, text2sparql
from serve.conversations import Conversations
from serve.graphs import ServedGraph
from serve.runs import PoolLimits, RunPool


def build_app(graphs: dict[str, ServedGraph], llm: ChatModel, limits: PoolLimits,
              conversations: Conversations | None = None, watch_grace: float | None = None) -> FastAPI:
    """The application for *graphs*, answering with *llm* within *limits*, keeping the chat's *conversations*
    (in memory when none are given); a chat question no page watches goes on for *watch_grace* seconds."""
    pool = RunPool(llm, limits)
    conversations = conversations or Conversations()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await asyncio.gather(*(asyncio.to_thread(graph.warm_up) for graph in graphs.values()))
        yield
        pool.close()
        conversations.close()

    app = FastAPI(title="spinach-serve", description="The SPINACH agent: the TEXT2SPARQL API and a chat page.",
                  lifespan=lifespan)
    app.state.graphs = graphs
    app.state.datasets = {iri: graph for graph in graphs.values() for iri in graph.datasets}
    app.state.pool = pool
    app.state.conversations = conversations
    app.state.chat_runs = {}
    app.state.conversation_runs = {}
    app.state.watch_grace = chat.WATCH_GRACE_SECONDS if watch_grace is None else watch_grace
    app.state.tasks = set()
    app.include_router(text2sparql.router)
    app.include_router(chat.router)
    chat.watch_line(app.state)
    app.mount("/static", StaticFiles(packages=[("serve", "static")]), name="static")
    return app
