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
model failure.
"""

from __future__ import annotations

import contextvars
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
from openai.types.chat import ChatCompletion

from agent.kb.http import MAX_RETRY_AFTER, retry_after_seconds, well_formed

DEFAULT_MODEL = "gpt-4o"


class LLMUnavailable(RuntimeError):
    """The endpoint could not produce a completion (after the client's retries)."""


class LLMConfigurationError(ValueError):
    """Neither an API key nor an endpoint is configured."""


class ToolsUnsupported(RuntimeError):
    """The endpoint refused a request because it carried tool definitions."""


class ToolChoiceRefused(RuntimeError):
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


class ChatModel:
    """``complete(messages, ...) -> Completion`` over an OpenAI-compatible client."""

    def __init__(self, client: openai.OpenAI, model: str | None = DEFAULT_MODEL,
                 named_by: str = LLMConfig.named_by) -> None:
        self.client = client
        self.model = model
        self.named_by = named_by

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
        return cls(openai_client(config), config.model, config.named_by)

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
    ) -> Completion:
        """One completion; with *tools*, one tool call at a time, chosen as *tool_choice* says.

        A *probe* is the first request of its kind (its ``tool_choice``): an
        error status is not asked again, so a refusal is known at once and
        raises :class:`ToolChoiceRefused` (the context, and a refusal of tools
        altogether, aside).  A busy or unreachable endpoint says nothing about
        the request: 429 and connection errors get the client's retries.
        """
        try:
            model = self.resolve_model()
        except LLMConfigurationError as error:
            raise LLMUnavailable(str(error)) from error
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
        try:
            response = self._post(request, probe)
        except openai.APITimeoutError as error:
            raise LLMUnavailable(f"no reply within {self.client.timeout} s (the model's timeout); "
                                 "not asked again") from error
        except openai.APIStatusError as error:
            if _CONTEXT_TOO_LONG.search(str(error)):
                raise ContextTooLong(f"the prompt does not fit the model's context: {error}") from error
            if tools and error.status_code == 400 and "tool" in str(error).lower():
                raise ToolsUnsupported(str(error)) from error
            if tools and probe:
                raise ToolChoiceRefused(f"HTTP {error.status_code} to tool_choice {tool_choice!r}: "
                                        f"{_error_text(error)}") from error
            if error.status_code == 400:
                raise LLMUnavailable(f"the endpoint refused the request: {error}") from error
            raise LLMUnavailable(f"{type(error).__name__}: {error}") from error
        except openai.APIError as error:
            raise LLMUnavailable(f"{type(error).__name__}: {error}") from error
        try:
            return _completion(response)
        except (NotACompletion, AttributeError, TypeError, IndexError, KeyError) as error:
            why = error if isinstance(error, NotACompletion) else "of another shape"
            raise LLMUnavailable(f"the endpoint's answer is not a chat completion ({why}): {_shown(response)}") \
                from error

    def _post(self, request: dict[str, Any], probe: bool) -> ChatCompletion:
        # The body is plain JSON already: ``chat.completions.create`` would first walk every message through
        # the SDK's typed-parameter transform (each against the union of message types, milliseconds a
        # message), which found nothing to convert and took most of a replayed run's time.  The client's
        # own ``post`` sends the same body with the same retries, timeout and errors.
        if probe:
            try:
                return self.client.post("/chat/completions", body=request, cast_to=ChatCompletion,
                                        options={"max_retries": 0})
            except openai.RateLimitError as error:  # busy: after the wait it asks for, the client's retries
                wait = retry_after_seconds(error.response.headers.get("Retry-After")) or 0.0
                time.sleep(min(wait, MAX_RETRY_AFTER))
            except openai.APIConnectionError as error:
                if isinstance(error, openai.APITimeoutError):
                    raise
        return self.client.post("/chat/completions", body=request, cast_to=ChatCompletion)


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
    :meth:`ChatModel.complete` does not take it for an unreachable model."""


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
            return self._send_guarded(guard, request, **options)
        try:
            return super().send(request, **options)
        except httpx2.TimeoutException as error:
            raise openai.APITimeoutError(request=request) from error

    def _send_guarded(self, guard: CallGuard, request: httpx2.Request, **options: Any) -> httpx2.Response:
        if guard.interrupted:
            raise Interrupted("the run was stopped before this model request")
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
