"""Which agent runs go when: a few at once in worker threads, a bounded line of runs waiting for a worker, a limit
per client, a deadline, and a way to stop a run whose asker went away.

The line is first come, first served, except that a run whose client already
has :attr:`PoolLimits.per_client` runs going lets the runs behind it pass: one
person's many questions wait their turn without holding back everyone else's.

The agent is synchronous (one model call, then one knowledge-base call, per
step), so each run takes a worker thread.  A run nobody waits for any more
(its client left, or its deadline passed) is stopped at once:
:meth:`Ticket.cancel` closes the model request in flight (the worker runs the
agent under the ticket's :class:`~agent.llm.CallGuard`; a local server may go on
generating its reply, so the model's next request, whichever run sends it,
first waits for the server to be idle) and the step callback
raises :class:`RunStopped` at the next step, so the worker is free for the
next question after at most the knowledge-base query under way (bounded by
its own timeout).  The asker does not wait for that: :meth:`RunPool.run`
answers at the deadline, and the steps taken so far stay on the ticket
(:meth:`Ticket.best_query`) for an answer from what the run had found.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum

from agent import Agent, AgentConfig, AgentContext, AgentResult, Step
from agent.examples.queries import shorten_text
from agent.llm import CallGuard, ChatModel, Interrupted
from agent.loop import best_query
from serve.graphs import ServedGraph

log = logging.getLogger(__name__)


class Busy(Exception):
    """A run refused before it starts: the queue is full (503) or the client has too many runs (429)."""

    def __init__(self, status: int, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


class RunStopped(Exception):
    """Raised from the step callback to end a run that was cancelled or ran out of time."""


class StopCause(StrEnum):
    """Why a run was stopped before it ended, as the log says it."""

    CLIENT_GONE = "client gone"
    PAST_DEADLINE = "past its deadline"
    ASKED = "its asker stopped it"


@dataclass
class PoolLimits:
    #: Runs at the same time (each a worker thread).
    workers: int = 2
    #: Runs admitted beyond those: they wait for a worker.
    queue: int = 20
    #: Runs one client (an address) may have going at once; the API refuses more, the chat page lines them up.
    per_client: int = 2
    #: Runs of one client that may wait in line beyond those (chat questions only); more are refused.
    waiting_per_client: int = 10
    #: Seconds from admission to the answer, the wait for a worker included.
    timeout: float = 300.0
    #: Seconds from admission to a TEXT2SPARQL answer: then the run stops and the API answers with its best query
    #: so far.  Below the challenge client's read timeout (180 s), so a slow question is answered, not skipped.
    answer_within: float = 150.0


@dataclass
class Ticket:
    """One admitted run: its client, its deadline, the flag that stops it and the steps it took so far."""

    client: str
    deadline: float
    stop: threading.Event = field(default_factory=threading.Event)
    #: Closes the run's model request in flight when the run is cancelled.
    guard: CallGuard = field(default_factory=CallGuard)
    #: Why the run was stopped (the first reason given), or ``None`` while it may go on.
    cause: StopCause | None = None
    #: The steps the run took, appended by the worker as it takes them.
    steps: list[Step] = field(default_factory=list)

    def cancel(self, cause: StopCause = StopCause.CLIENT_GONE) -> None:
        """Stop the run now: its model request in flight is closed, and it takes no further step."""
        if self.cause is None:
            self.cause = cause
        self.stop.set()
        self.guard.interrupt()

    def answer_by(self, deadline: float) -> None:
        """Bring the deadline forward to *deadline* (``time.monotonic()``), if that is sooner."""
        self.deadline = min(self.deadline, deadline)

    def check(self) -> None:
        """Raise :class:`RunStopped` when the run was cancelled or is past its deadline."""
        if not self.stop.is_set() and time.monotonic() > self.deadline:
            self.cancel(StopCause.PAST_DEADLINE)
        if self.stop.is_set():
            raise RunStopped(self.cause or StopCause.CLIENT_GONE)

    def best_query(self) -> str | None:
        """The run's best query so far: the last one it ran that returned rows (or a boolean), if any."""
        steps = list(self.steps)
        found = best_query(steps)
        return steps[found].argument if found is not None else None


@dataclass(eq=False)
class _Place:
    """A ticket's place in the line: *turn* is resolved (true: a worker is its; false: it left) when it leaves."""

    ticket: Ticket
    turn: asyncio.Future[bool] | None = None
    #: Its turn came (true) or it left the line (false) before anyone awaited *turn*.
    outcome: bool | None = None

    def leave(self, started: bool) -> None:
        self.outcome = started
        if self.turn is not None and not self.turn.done():
            self.turn.set_result(started)


class RunPool:
    """Runs agents for the API and the chat page on one model, within :class:`PoolLimits`."""

    def __init__(self, llm: ChatModel, limits: PoolLimits) -> None:
        self.llm = llm
        self.limits = limits
        self.executor = ThreadPoolExecutor(limits.workers, thread_name_prefix="agent-run")
        #: Runs holding a worker, by client.
        self.running: Counter[str] = Counter()
        #: Admitted runs waiting for a worker, in the order they came.
        self.line: list[_Place] = []
        #: Every admitted ticket's place (by the ticket's identity) until it is released: what is admitted, in all
        #: and by client.
        self.places: dict[int, _Place] = {}
        #: Called (in the event loop) whenever the line moves: pages show each waiting question's place.
        self.watchers: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def admit(self, client: str, *, may_wait: bool = False) -> Ticket:
        """A ticket for a run of *client*'s, or :class:`Busy` when the queue or the client's share is full.

        With *may_wait* (a person's chat questions) a client's runs beyond :attr:`PoolLimits.per_client` wait in
        line, up to :attr:`PoolLimits.waiting_per_client` of them; without it (the API) they are refused."""
        with self._lock:
            mine = sum(place.ticket.client == client for place in self.places.values())
            waiting = sum(place.ticket.client == client for place in self.line)
            if not may_wait and mine >= self.limits.per_client:
                raise Busy(429, f"you have {mine} questions running; wait for one to end", 10)
            if may_wait and waiting >= self.limits.waiting_per_client:
                raise Busy(429, f"you have {waiting} questions waiting in line; wait for one to start", 10)
            if len(self.places) >= self.limits.workers + self.limits.queue:
                raise Busy(503, "the server is answering as many questions as it can; ask again shortly", 30)
            ticket = Ticket(client, time.monotonic() + self.limits.timeout)
            self.places[id(ticket)] = place = _Place(ticket)
            self.line.append(place)
        self._advance()
        if self.position(ticket):  # an operator sees why an answer is slow
            log.info("queued for %s: every worker is busy, %d waiting", client, len(self.line))
        return ticket

    def position(self, ticket: Ticket) -> int:
        """*ticket*'s place in the line (1 is next), or 0 once a worker took it (or it left)."""
        with self._lock:
            return next((index for index, place in enumerate(self.line, 1) if place.ticket is ticket), 0)

    def _advance(self) -> None:
        """Give each free worker the first run in line whose client has a run to spare, and tell the watchers."""
        started: list[_Place] = []
        with self._lock:
            while sum(self.running.values()) < self.limits.workers:
                place = next((place for place in self.line
                              if self.running[place.ticket.client] < self.limits.per_client), None)
                if place is None:
                    break
                self.line.remove(place)
                self.running[place.ticket.client] += 1
                started.append(place)
        for place in started:
            place.leave(True)
        self._moved()

    def _moved(self) -> None:
        for watcher in list(self.watchers):
            watcher()

    async def wait_turn(self, ticket: Ticket) -> bool:
        """Wait until a worker is *ticket*'s (true), or it left the line (false, released); past its deadline the
        ticket leaves and :class:`TimeoutError` is raised, as it is for a run."""
        with self._lock:
            place = self.places.get(id(ticket))
        if place is None:  # released already
            return False
        if place.outcome is None:
            place.turn = asyncio.get_running_loop().create_future()
        try:
            started = place.outcome if place.outcome is not None else await asyncio.wait_for(
                asyncio.shield(place.turn), max(0.0, ticket.deadline - time.monotonic()))
        except (TimeoutError, asyncio.CancelledError):
            if place.outcome:  # the turn came as the asker left: give the worker back
                self.release(ticket)
            else:
                self.withdraw(ticket)
            raise
        return started

    def withdraw(self, ticket: Ticket) -> bool:
        """Take *ticket* out of the line, its run stopped before it began (released now); false when it was not
        waiting (it runs, or is done)."""
        with self._lock:
            place = next((place for place in self.line if place.ticket is ticket), None)
            if place is not None:
                self.line.remove(place)
        if place is None:
            return False
        ticket.stop.set()
        place.leave(False)
        self.release(ticket, started=False)
        return True

    def release(self, ticket: Ticket, started: bool = True) -> None:
        """Free what *ticket* held: its place in the counts, and its worker when it had one."""
        with self._lock:
            if self.places.pop(id(ticket), None) is None:
                return  # released already
            if started:
                self.running[ticket.client] -= 1
                if self.running[ticket.client] <= 0:
                    del self.running[ticket.client]
        self._advance()

    async def run(self, ticket: Ticket, graph: ServedGraph, question: str, context: AgentContext | None = None,
                  *, answer_guaranteed: bool = False, on_start: Callable[[], None] | None = None,
                  on_step: Callable[[Step], None] | None = None) -> AgentResult | None:
        """The agent's result, or ``None`` when the run was cancelled; :class:`TimeoutError` past the deadline (the
        run is then stopped, and :meth:`Ticket.best_query` says what it had found).

        *on_start* (when a worker takes the run) and *on_step* are called in the worker thread.  The ticket is
        released when the worker is done with the run (also when its asker stopped waiting), so the pool never
        holds more runs than it admitted.
        """
        def step(taken: Step) -> None:
            ticket.steps.append(taken)
            if on_step:
                on_step(taken)
            ticket.check()

        def work() -> AgentResult | None:
            with ticket.guard.installed():
                try:
                    ticket.check()  # cancelled, or out of time, while it waited
                    if on_start:
                        on_start()
                    agent = Agent(self.llm, graph.kb, AgentConfig(answer_guaranteed=answer_guaranteed))
                    return agent.run(question, context, on_step=step)
                except (RunStopped, Interrupted):
                    log.info("run stopped (%s%s): %s", ticket.cause or StopCause.CLIENT_GONE,
                             "; its model request closed" if ticket.guard.closed_request else "",
                             shorten_text(question, 200))
                    return None

        if not await self.wait_turn(ticket):  # stopped while it waited in line
            log.info("run stopped (%s) before it started: %s", ticket.cause or "cancelled", shorten_text(question, 200))
            return None
        future = asyncio.get_running_loop().run_in_executor(self.executor, work)
        future.add_done_callback(lambda _: self.release(ticket))
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, ticket.deadline - time.monotonic()))
        except TimeoutError:
            ticket.cancel(StopCause.PAST_DEADLINE)
            raise
        except asyncio.CancelledError:  # its asker stopped waiting
            ticket.cancel(StopCause.CLIENT_GONE)
            raise

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
