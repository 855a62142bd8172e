"""The language model, reached through any OpenAI-compatible endpoint.

:class:`ChatModel` wraps an injected ``openai`` client, so tests and other
callers choose the transport.  The client's own retry loop does the waiting:
it backs off exponentially on 408/409/429/5xx and connection errors and
honours ``Retry-After``.  What is left after those retries becomes
:class:`LLMUnavailable`, which ends an agent run cleanly instead of crashing
the bot or the evaluation harness.  A prompt longer than the model's context
is :class:`ContextTooLong`: asking again cannot help, so it is never retried.
Endpoints say it in their own words: OpenAI and vLLM "This model's maximum
context length is …" (OpenAI's code ``context_length_exceeded``),
llama.cpp's server the type ``exceed_context_size_error``.

A reply slower than the timeout is not asked for again (:func:`openai_client`):
a local model that is merely slow would be as slow the next time, and each
retry would cost the whole timeout again.  A request whose ``tool_choice``
the endpoint refuses is :class:`ToolChoiceRefused`: llama-cpp-python's server
takes ``auto`` but answers ``required`` with HTTP 500 and an empty message.

A caller that may stop waiting (the service, for a client that left or a
deadline that passed) runs the agent under a :class:`CallGuard`: the request
in flight is then closed at once by :meth:`CallGuard.interrupt`, from any
thread, and ends as :class:`Interrupted`, neither retried nor reported as a
model failure.  A request closed so counts as one that timed out: the next
request of the model, whichever run sends it, first waits for the endpoint
to be idle (below).

A request that timed out may keep the server busy: llama-cpp-python's server
finishes a non-streamed reply whoever waits for it (a minute and more on a
small machine), so the next request would queue behind it and time out in
turn.  Two things keep that from costing the next question: a model with
``stream`` set (:attr:`LLMConfig.stream`, for a local server) asks for the
reply in chunks and closes the request when its time is up, and such a server
stops generating at the next chunk it cannot send (requests with tool
definitions are sent whole all the same: llama-cpp-python's tool-calling
format raises "Automatic streaming tool choice is not supported" for a
streamed tool call, after its answer has begun); and after any timeout the
next request is sent only once the endpoint answers ``GET /models`` again (a
busy llama-cpp-python server answers it after the generation it is busy
with), within that request's own timeout, or the call fails saying the
endpoint is still busy.

Every request sent is counted, the client's retries included
(:attr:`Completion.attempts`, :attr:`ModelRequestError.attempts`), so a
run's count of model calls holds the calls that timed out or failed too.
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2
import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from agent.kb.http import MAX_RETRY_AFTER, retry_after_seconds, time_left, well_formed

DEFAULT_MODEL = "gpt-4o"
log = logging.getLogger("agent")


class ModelRequestError(RuntimeError):
    """A model call that gave no completion; *attempts* is how many requests it sent (0: none was sent)."""

    attempts: int = 1


class LLMUnavailable(ModelRequestError):
    """The endpoint could not produce a completion (after the client's retries)."""


class LLMConfigurationError(ValueError):
    """Neither an API key nor an endpoint is configured."""


class ToolsUnsupported(ModelRequestError):
    """The endpoint refused a request because it carried tool definitions."""


class ToolChoiceRefused(ModelRequestError):
    """The endpoint failed a tools request for its ``tool_choice``; the message says how (status and text)."""


class NotACompletion(ValueError):
    """An endpoint's answer with status 200 that holds no chat completion (a proxy's page, another shape)."""


class ContextTooLong(LLMUnavailable):
    """The prompt does not fit the model's context: the run cannot go on, and asking again will not help."""


#: How endpoints say a prompt does not fit: OpenAI and vLLM, OpenAI's error code, llama.cpp's server.
_CONTEXT_TOO_LONG = re.compile(r"maximum context length|context_length_exceeded|exceed_context_size_error"
                               r"|exceeds the available context size", re.IGNORECASE)


@dataclass
class LLMConfig:
    """Where the model lives.  A custom ``base_url`` may need no key (local servers)."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    #: ``None``: the one model the endpoint serves (asked at the first call), or ``gpt-4o`` on OpenAI itself.
    model: str | None = DEFAULT_MODEL
    #: Seconds one completion may take (a local model on a small machine may need minutes).
    timeout: float = 60.0
    max_retries: int = 4
    #: Ask for each reply without tool definitions in chunks, so that a request closed at its timeout stops a
    #: local server's generation (llama-cpp-python's server notices a closed request only between chunks).
    stream: bool = False
    #: Where the program using this model takes its name from, as the advice of an error says it.
    named_by: str = "--model or SPINACH_MODEL"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ, **overrides: Any) -> LLMConfig:
        """Read ``OPENAI_BASE_URL``, ``OPENAI_API_KEY`` and ``SPINACH_MODEL``; *overrides* win when not None.

        Without a model named anywhere, an endpoint of its own (``OPENAI_BASE_URL``)
        is asked which model it serves rather than sent ``gpt-4o``.
        """
        config = cls(
            base_url=environ.get("OPENAI_BASE_URL") or None,
            api_key=environ.get("OPENAI_API_KEY") or None,
            model=environ.get("SPINACH_MODEL") or None,
        )
        for name, value in overrides.items():
            if value is not None:
                setattr(config, name, value)
        if config.model is None and not config.base_url:
            config.model = DEFAULT_MODEL
        return config


@dataclass
class ToolCall:
    name: str
    arguments: str


@dataclass
class Completion:
    content: str
    tool_calls: list[ToolCall]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    #: The model the endpoint says answered ("" when it does not say).
    model: str = ""
    #: Requests sent for this completion: the client's retries and a refused first request included.
    attempts: int = 1


def _attempt(request: httpx2.Request | None) -> int:
    """Which attempt *request* was, 1 for the first, from the retry count the ``openai`` client sends with each."""
    try:
        return int(request.headers.get("x-stainless-retry-count", 0)) + 1 if request is not None else 1
    except ValueError:
        return 1


def _seconds(timeout: Any) -> float | None:
    """A client's timeout in seconds (a number, or an HTTP client's ``Timeout`` by its read timeout)."""
    if isinstance(timeout, int | float):
        return float(timeout)
    return getattr(timeout, "read", None)


class ChatModel:
    """``complete(messages, ...) -> Completion`` over an OpenAI-compatible client."""

    def __init__(self, client: openai.OpenAI, model: str | None = DEFAULT_MODEL,
                 named_by: str = LLMConfig.named_by, stream: bool = False) -> None:
        self.client = client
        self.model = model
        self.named_by = named_by
        self.stream = stream
        #: A request of this model timed out, or was closed by its run's stop: the endpoint may still be busy with it.
        self.abandoned = False

    def resolve_model(self) -> str:
        """The model requests name: the configured one, else the one the endpoint serves (asked once).

        Raises :class:`LLMConfigurationError` when the endpoint lists none, or
        several, or cannot say.
        """
        if self.model is None:
            self.model = served_model(self.client, self.named_by)
        return self.model

    @classmethod
    def from_config(cls, config: LLMConfig) -> ChatModel:
        """The model of *config*; with no model named, the one the endpoint serves, asked at the first call
        (or by :meth:`resolve_model`)."""
        if not config.api_key and not config.base_url:
            raise LLMConfigurationError(
                "no language model is configured: set OPENAI_API_KEY for OpenAI, "
                "or OPENAI_BASE_URL for another OpenAI-compatible endpoint"
            )
        return cls(openai_client(config), config.model, config.named_by, config.stream)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float,
        top_p: float | None = None,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str = "required",
        probe: bool = False,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
        timeout: float | None = None,
    ) -> Completion:
        """One completion; with *tools*, one tool call at a time, chosen as *tool_choice* says.

        *timeout* shortens the client's own (what remains of a run's time, say).
        After a request that timed out, this one is sent only once the endpoint
        answers again (:meth:`await_idle`), and that wait is taken from the
        call's time: the request gets what is left of it.

        A *probe* is the first request of its kind (its ``tool_choice``): an
        error status is not asked again, so a refusal is known at once and
        raises :class:`ToolChoiceRefused` (the context, and a refusal of tools
        altogether, aside).  A busy or unreachable endpoint says nothing about
        the request: 429 and connection errors get the client's retries.
        """
        limit = _seconds(self.client.timeout)
        why = "the model's timeout"
        if timeout is not None and (limit is None or timeout < limit):
            limit, why = max(timeout, 0.0), "what remained of the run's time"
        try:
            model = self.resolve_model()
        except LLMConfigurationError as error:
            raise _unsent(LLMUnavailable(str(error))) from error
        if self.abandoned:
            waited = time.monotonic()
            self.await_idle(limit)
            if limit is not None:  # the wait is part of this call's time: the request gets what is left of it
                limit = max(0.0, limit - (time.monotonic() - waited))
        request: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
        if top_p is not None:
            request["top_p"] = top_p
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        if stop:
            request["stop"] = stop
        if tools:
            request["tools"] = tools
            request["tool_choice"] = tool_choice
            request["parallel_tool_calls"] = False
        sent = [0]  # requests of earlier tries (a probe's), the one that answered or failed last aside
        try:
            completion = self._post(request, probe, limit, sent)
        except Interrupted as error:
            # A request closed by its run's stop leaves the server as a timeout does: maybe still generating.
            self.abandoned = self.abandoned or error.sent
            raise
        except openai.APITimeoutError as error:
            self.abandoned = True
            raise _counted(LLMUnavailable(f"no reply within {round(limit, 1):g} s ({why}); not asked again"),
                           sent, error.request) from error
        except openai.APIStatusError as error:
            request_sent = error.response.request
            if _CONTEXT_TOO_LONG.search(str(error)):
                raise _counted(ContextTooLong(f"the prompt does not fit the model's context: {error}"),
                               sent, request_sent) from error
            if error.status_code == 429:  # busy, whatever was asked: after the retries the wait allowed
                asked = retry_after_seconds(error.response.headers.get("Retry-After"))
                raise _counted(LLMUnavailable(
                    f"the endpoint is busy (HTTP 429{f', come back in {asked:g} s' if asked else ''}): "
                    f"{_error_text(error)}"), sent, request_sent) from error
            if tools and error.status_code == 400 and "tool" in str(error).lower():
                raise _counted(ToolsUnsupported(str(error)), sent, request_sent) from error
            if tools and probe:
                raise _counted(ToolChoiceRefused(f"HTTP {error.status_code} to tool_choice {tool_choice!r}: "
                                                 f"{_error_text(error)}"), sent, request_sent) from error
            if error.status_code == 400:
                raise _counted(LLMUnavailable(f"the endpoint refused the request: {error}"),
                               sent, request_sent) from error
            raise _counted(LLMUnavailable(f"{type(error).__name__}: {error}"), sent, request_sent) from error
        except openai.APIError as error:
            raise _counted(LLMUnavailable(f"{type(error).__name__}: {error}"), sent,
                           getattr(error, "request", None)) from error
        except _NotRead as error:
            failure = error.__cause__
            why_not = failure if isinstance(failure, NotACompletion) else "of another shape"
            raise _counted(LLMUnavailable(f"the endpoint's answer is not a chat completion ({why_not}): "
                                          f"{_shown(error.response)}"), sent, error.request) from failure
        completion.attempts += sent[0]
        return completion

    def await_idle(self, limit: float | None) -> None:
        """Wait, at most *limit* seconds, until the endpoint answers ``GET /models`` after a request timed out.

        A server still generating the abandoned reply answers it only after that
        (llama-cpp-python's server takes its model's lock for it), so the next
        request is not sent blind into that queue.  Any answer will do, an error
        status included; an endpoint that cannot be reached is left to the request.
        """
        limit = LLMConfig.timeout if limit is None else limit  # never a wait without an end
        started = time.monotonic()
        try:
            self.client.get("/models", cast_to=object, options={"timeout": limit, "max_retries": 0})
        except openai.APITimeoutError as error:
            raise _unsent(LLMUnavailable(
                f"the endpoint is still busy with a request that timed out (no answer to GET /models within "
                f"{round(limit, 1):g} s); nothing was sent")) from error
        except openai.APIError:
            pass
        self.abandoned = False
        log.info("the model endpoint answered again after a wait of %.1f s (a request had timed out or been closed)",
                 time.monotonic() - started)

    def _post(self, request: dict[str, Any], probe: bool, limit: float | None, sent: list[int]) -> Completion:
        # The body is plain JSON already: ``chat.completions.create`` would first walk every message through
        # the SDK's typed-parameter transform (each against the union of message types, milliseconds a
        # message), which found nothing to convert and took most of a replayed run's time.  The client's
        # own ``post`` sends the same body with the same retries, timeout and errors.
        options: dict[str, Any] = {} if limit is None else {"timeout": limit}
        if probe:
            try:
                return self._send(request, {**options, "max_retries": 0}, limit)
            except openai.RateLimitError as error:  # busy: after the wait it asks for, the client's retries
                wait = min(retry_after_seconds(error.response.headers.get("Retry-After")) or 0.0, MAX_RETRY_AFTER)
                if limit is not None and wait >= limit:  # the wait would outlast the call's time: busy it is
                    raise
                sent[0] += 1
                time.sleep(wait)
                if limit is not None:
                    limit -= wait
                    options["timeout"] = limit
            except openai.APIConnectionError as error:
                if isinstance(error, openai.APITimeoutError):
                    raise
                sent[0] += 1
        return self._send(request, options, limit)

    def _send(self, request: dict[str, Any], options: dict[str, Any], limit: float | None) -> Completion:
        """One request (with the client's retries), read whole or, with :attr:`stream` and no tools, chunk by
        chunk."""
        if not self.stream or request.get("tools"):
            options = {**options, "headers": {"X-Stainless-Raw-Response": "true"}}  # to read its retry count
            raw = self.client.post("/chat/completions", body=request, cast_to=ChatCompletion, options=options)
            response = raw.parse()
            try:
                completion = _completion(response)
            except (NotACompletion, AttributeError, TypeError, IndexError, KeyError) as error:
                raise _NotRead(response, raw.http_request) from error
            completion.attempts = raw.retries_taken + 1
            return completion
        deadline = None if limit is None else time.monotonic() + limit
        chunks = self.client.post("/chat/completions", body={**request, "stream": True,
                                                              "stream_options": {"include_usage": True}},
                                  cast_to=ChatCompletion, options=options, stream=True,
                                  stream_cls=openai.Stream[ChatCompletionChunk])
        with chunks:  # closed however the reading ends: the server sees the request go and stops generating
            kind = chunks.response.headers.get("content-type", "")
            try:
                if not kind.startswith("text/event-stream"):  # a proxy's page, a whole JSON answer
                    raise NotACompletion(f"{kind or 'an answer without a content type'}, not a stream of events")
                completion = _assembled(chunks, deadline)
            except Exception as error:
                if (guard := _GUARD.get()) is not None and guard.interrupted:  # the stop shut the socket mid-reply
                    raise Interrupted("the run was stopped: its model request was closed") from error
                if not isinstance(error, NotACompletion | AttributeError | TypeError | IndexError | KeyError):
                    raise
                shown = chunks.response.read().decode("utf-8", "replace") if isinstance(error, NotACompletion) \
                    and not kind.startswith("text/event-stream") else "a stream of chunks"
                raise _NotRead(shown, chunks.response.request) from error
        completion.attempts = _attempt(chunks.response.request)
        return completion


class _NotRead(Exception):
    """An answer that holds no chat completion, with the request that got it."""

    def __init__(self, response: Any, request: httpx2.Request | None) -> None:
        super().__init__("not a chat completion")
        self.response = response
        self.request = request


def _counted(error: ModelRequestError, sent: list[int], request: httpx2.Request | None) -> ModelRequestError:
    """*error* with the requests its call sent: the earlier tries' and the last one's attempts."""
    error.attempts = sent[0] + _attempt(request)
    return error


def _unsent(error: ModelRequestError) -> ModelRequestError:
    error.attempts = 0
    return error


def _assembled(chunks: openai.Stream[ChatCompletionChunk], deadline: float | None) -> Completion:
    """The :class:`Completion` the chunks of a streamed reply make, tool calls included; a reply still running at
    *deadline* is a timeout (the caller closes the request)."""
    content: list[str] = []
    calls: dict[int, list[str]] = {}
    usage: Any = None
    model = ""
    chosen = False
    for chunk in chunks:
        if deadline is not None and time.monotonic() > deadline:
            raise openai.APITimeoutError(request=chunks.response.request)
        model = chunk.model or model
        usage = chunk.usage or usage
        for choice in chunk.choices[:1]:
            chosen = True
            delta = choice.delta
            content.append(delta.content or "")
            for call in delta.tool_calls or []:
                name, arguments = calls.setdefault(call.index, ["", ""])
                if call.function is not None:
                    calls[call.index] = [name + (call.function.name or ""),
                                         arguments + (call.function.arguments or "")]
    if not chosen:
        raise NotACompletion("no choices")
    cached = 0
    if usage is not None and usage.prompt_tokens_details is not None:
        cached = usage.prompt_tokens_details.cached_tokens or 0
    return Completion(
        content=well_formed("".join(content)),
        tool_calls=[ToolCall(well_formed(name), well_formed(arguments)) for name, arguments in
                    (calls[index] for index in sorted(calls))],
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=cached,
        model=model,
    )


def _completion(response: Any) -> Completion:
    """The :class:`Completion` in an endpoint's answer; an error when the answer is no chat completion (a proxy's
    HTML page sent with status 200, a JSON object of another shape)."""
    if not isinstance(response, ChatCompletion):
        raise NotACompletion("text" if isinstance(response, str) else type(response).__name__)
    if not response.choices:
        raise NotACompletion("no choices")
    message = response.choices[0].message
    if message is None:
        raise NotACompletion("a choice without a message")
    calls = [
        ToolCall(well_formed(call.function.name or ""), well_formed(call.function.arguments or ""))
        for call in (message.tool_calls or [])
        if getattr(call, "function", None) is not None
    ]
    usage = response.usage
    cached = 0
    if usage is not None and usage.prompt_tokens_details is not None:
        cached = usage.prompt_tokens_details.cached_tokens or 0
    return Completion(
        content=well_formed(message.content or ""),
        tool_calls=calls,
        prompt_tokens=usage.prompt_tokens if usage else 0,
        completion_tokens=usage.completion_tokens if usage else 0,
        cached_tokens=cached,
        model=getattr(response, "model", "") or "",
    )


def _shown(response: Any) -> str:
    """The start of an answer that is no chat completion, on one line, for the one line that reports it."""
    text = response if isinstance(response, str) else repr(response)
    return " ".join(text[:200].split()) or "an empty answer"


def _error_text(error: openai.APIStatusError) -> str:
    """What the endpoint said, or that it said nothing (llama-cpp-python's refusal of ``required``)."""
    body = error.body
    message = body.get("message") if isinstance(body, dict) else None
    if message is None and isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
    text = str(message if message is not None else error.message).strip()
    return text[:500] if text else "no message"


class Interrupted(openai.OpenAIError):
    """The model request was closed because its run was stopped (:meth:`CallGuard.interrupt`): nobody waits for
    its answer.  An ``OpenAIError`` that is no ``APIError``, so the client passes it on without a retry and
    :meth:`ChatModel.complete` does not take it for an unreachable model.

    *sent*: a request was out and was closed, so the server may still be busy with it (the model's next
    request then waits for it, as after a timeout); false when the stop came before the request was sent.
    """

    def __init__(self, message: str, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


class CallGuard:
    """Lets another thread close the model request a run has in flight.

    The thread that runs the agent installs the guard (:meth:`installed`);
    each model request it sends then goes on a connection of its own
    (``Connection: close``, never one an unguarded request left open), whose
    socket the guard keeps until the connection is closed with the reply (a
    streamed reply's too).  :meth:`interrupt` shuts that socket down, which
    ends the blocked read at once, and makes every later request of the run
    end as :class:`Interrupted` before it is sent.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.interrupted = False
        #: Whether :meth:`interrupt` closed a request that was out.
        self.closed_request = False

    @contextmanager
    def installed(self) -> Iterator[CallGuard]:
        """Guard the model requests this thread (this context) sends until the block ends."""
        token = _GUARD.set(self)
        try:
            yield self
        finally:
            _GUARD.reset(token)

    def interrupt(self) -> bool:
        """Close the request in flight, if any, and refuse the next ones; whether a request was closed."""
        with self._lock:
            self.interrupted = True
            # The last request's socket, unless its connection was closed (a socket closed is -1, never reused).
            open_socket = self._socket if self._socket is not None and self._socket.fileno() != -1 else None
            self.closed_request = self.closed_request or open_socket is not None
        if open_socket is not None:
            _shut(open_socket)
        return open_socket is not None

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx's ``trace`` extension: keep the socket of the connection the request opened (TCP, then TLS)."""
        if not event.endswith(("connect_tcp.complete", "start_tls.complete")):
            return
        stream = info.get("return_value")
        found = stream.get_extra_info("socket") if stream is not None else None
        if found is None:
            return
        with self._lock:
            self._socket = found
            late = self.interrupted
            self.closed_request = self.closed_request or late
        if late:  # interrupted while it connected
            _shut(found)


def _shut(open_socket: socket.socket) -> None:
    try:
        open_socket.shutdown(socket.SHUT_RDWR)
    except OSError:  # closed already
        pass


#: The guard of the run this thread (this context) works for, if any.
_GUARD: contextvars.ContextVar[CallGuard | None] = contextvars.ContextVar("model_call_guard", default=None)


class _TimeoutIsFinal(openai.DefaultHttpxClient):
    """The HTTP client of :func:`openai_client`: a timeout (waiting for the reply or reading it) is final.

    The ``openai`` client sends a request again when its HTTP client raises a
    timeout, but passes its own errors on as they are: here a timeout is raised
    as ``APITimeoutError``, and a request a :class:`CallGuard` closed as
    :class:`Interrupted`.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._options = options
        #: Sends the guarded requests (made at the first): each on a connection of its own, never one an unguarded
        #: request left in the pool, whose socket the guard would not know.
        self._guarded: httpx2.Client | None = None
        self._guarded_lock = threading.Lock()

    def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        guard = _GUARD.get()
        if guard is not None:
            return _not_retried_past_the_deadline(self._send_guarded(guard, request, **options))
        try:
            return _not_retried_past_the_deadline(super().send(request, **options))
        except httpx2.TimeoutException as error:
            raise openai.APITimeoutError(request=request) from error

    def _send_guarded(self, guard: CallGuard, request: httpx2.Request, **options: Any) -> httpx2.Response:
        if guard.interrupted:
            raise Interrupted("the run was stopped before this model request", sent=False)
        request.headers["Connection"] = "close"
        request.extensions = {**request.extensions, "trace": guard.trace}
        with self._guarded_lock:
            if self._guarded is None:
                self._guarded = openai.DefaultHttpxClient(**self._options)
            client = self._guarded
        try:
            return client.send(request, **options)
        except Exception as error:
            if guard.interrupted:
                raise Interrupted("the run was stopped: its model request was closed") from error
            if isinstance(error, httpx2.TimeoutException):
                raise openai.APITimeoutError(request=request) from error
            raise

    def close(self) -> None:
        if self._guarded is not None:
            self._guarded.close()
        super().close()


def _not_retried_past_the_deadline(response: httpx2.Response) -> httpx2.Response:
    """*response*, marked not to be sent again (``x-should-retry: false``, which the ``openai`` client obeys) when
    it is an error whose wait (its ``Retry-After``) would end after the run's :func:`agent.kb.http.deadline`: a run
    is not put to sleep past its time for a request it could no longer use."""
    left = time_left()
    if left is not None and response.status_code >= 400 and \
            (retry_after_seconds(response.headers.get("Retry-After")) or 0.0) >= left:
        response.headers["x-should-retry"] = "false"
    return response


def openai_client(config: LLMConfig) -> openai.OpenAI:
    """The client of *config*'s endpoint: its retries for errors and overload, none for a reply that timed out."""
    return openai.OpenAI(
        api_key=config.api_key or "no-key-needed",
        base_url=config.base_url,
        timeout=config.timeout,
        max_retries=config.max_retries,
        http_client=_TimeoutIsFinal(),
    )


def served_model(client: openai.OpenAI, named_by: str = LLMConfig.named_by) -> str:
    """The one model an endpoint lists (``GET /models``), as vLLM, llama.cpp's server and Ollama answer it.

    *named_by* says where the program takes a model's name from, for the advice when the endpoint cannot say.
    """
    try:
        models = [model.id for model in client.models.list()]
    except openai.APIError as error:
        raise LLMConfigurationError(f"no model was named, and the endpoint did not say which it serves "
                                    f"({type(error).__name__}: {error}); name one with {named_by}")
    if len(models) != 1:
        raise LLMConfigurationError(f"no model was named and the endpoint serves {len(models)} "
                                    f"({', '.join(models[:10]) or 'none'}); name one with {named_by}")
    return models[0]
