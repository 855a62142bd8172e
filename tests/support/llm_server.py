"""An OpenAI-compatible chat completions server on 127.0.0.1, answering from a script.

The real ``openai`` client talks to it through its ``base_url``, so the whole
client path (serialisation, retries, ``Retry-After``, timeouts) is exercised.

A script is either a list of replies, served in order, or a function from the
request body to a reply (for tests that must answer by what was asked, e.g.
pruning calls versus policy calls).  Every request body is kept in
``server.requests``.

Like a local server it serves one model, listed at ``GET /v1/models`` and
named in every completion (``model``), whatever name a request asks for.
With a context size, a request longer than it (about 4 characters a token,
the completion's ``max_tokens`` included) gets the error the named server
sends: vLLM's OpenAI-compatible server or llama.cpp's ``llama-server``.

It can also answer as llama-cpp-python's server (0.3.36) does with its
``chatml-function-calling`` format: ``tool_choice`` "required" fails with
HTTP 500 and an empty message (the format asserts "auto", and the server
wraps any exception as a 500 with its text), and an assistant message whose
``content`` is null fails the server's request validation, wrapped the same
way.  A server that ignores tools (a model's own chat template) is a script
of :class:`TextReply` to tools requests.

A request with ``"stream": true`` is answered as OpenAI streams it: server-sent
events, one ``chat.completion.chunk`` a piece of the reply (tool calls in
pieces too), then a chunk with the usage when ``stream_options`` asks for it,
then ``[DONE]``; errors and raw bodies are sent as they are, before any chunk.
With ``one_at_a_time`` it serves as llama-cpp-python's server does: one
completion at a time under its model's lock, which ``GET /v1/models`` takes
too, so a cheap request waits behind a generation.  :class:`EndlessReply`
"generates" until the test stops it: streamed, it notices a client that went
away at its next chunk and stops (``noticed``); not streamed, it goes on as
that server's non-streamed generation does, whoever still waits for it.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.support.loopback import LoopbackServer


@dataclass
class ToolCallReply:
    """The model calls tool *name* with *arguments*; *content* is its visible thought."""

    name: str
    arguments: dict[str, Any] | str
    content: str = ""


@dataclass
class TextReply:
    """A plain assistant message, as an endpoint without tool calling answers."""

    text: str


@dataclass
class ErrorReply:
    """An HTTP error, e.g. 429 with ``Retry-After`` or a 500; *body* replaces the default error JSON."""

    status: int
    message: str = "error"
    retry_after: float | None = None
    body: dict[str, Any] | None = None


def vllm_context_error(max_model_len: int, prompt_tokens: int) -> ErrorReply:
    """vLLM's answer to a prompt longer than ``--max-model-len`` (its OpenAI-compatible server, HTTP 400)."""
    return ErrorReply(400, body={"error": {
        "message": f"This model's maximum context length is {max_model_len} tokens. However, your request has "
                   f"{prompt_tokens} input tokens. Please reduce the length of the input messages. None",
        "type": "BadRequestError", "param": None, "code": 400}})


def llamacpp_context_error(n_ctx: int, prompt_tokens: int) -> ErrorReply:
    """llama.cpp's ``llama-server`` answer to a prompt over its context size (HTTP 400)."""
    return ErrorReply(400, body={"error": {
        "code": 400, "message": f"request ({prompt_tokens} tokens) exceeds the available context size "
                                f"({n_ctx} tokens), try increasing it",
        "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens, "n_ctx": n_ctx}})


#: The context errors of the servers the stand-in can speak as.
CONTEXT_ERRORS = {"vllm": vllm_context_error, "llama.cpp": llamacpp_context_error}


def llama_cpp_python_error(message: str) -> ErrorReply:
    """llama-cpp-python's server: any exception of a route as HTTP 500, with the exception's text."""
    return ErrorReply(500, body={"error": {"message": message, "type": "internal_server_error", "param": None,
                                           "code": None}})


def null_content_errors(body: dict[str, Any]) -> str:
    """pydantic's account of each assistant message with ``content`` null, as llama-cpp-python 0.3.36's server gives
    it (its union of six message types: seven errors a message), or "" when there is none."""
    errors = []
    for index, message in enumerate(body.get("messages", [])):
        if message.get("role") != "assistant" or "content" not in message or message["content"] is not None:
            continue
        at = f"('body', 'messages', {index}, "
        for kind, role in (("System", "system"), ("User", "user")):
            errors.append(f"{{'type': 'literal_error', 'loc': {at}'ChatCompletionRequest{kind}Message', 'role'), "
                          f"'msg': \"Input should be '{role}'\", 'input': 'assistant', "
                          f"'ctx': {{'expected': \"'{role}'\"}}}}")
        errors.append(f"{{'type': 'string_type', 'loc': {at}'ChatCompletionRequestAssistantMessage', 'content'), "
                      "'msg': 'Input should be a valid string', 'input': None}")
        for kind, role, field_name in (("Tool", "tool", "tool_call_id"), ("Function", "function", "name")):
            errors.append(f"{{'type': 'literal_error', 'loc': {at}'ChatCompletionRequest{kind}Message', 'role'), "
                          f"'msg': \"Input should be '{role}'\", 'input': 'assistant', "
                          f"'ctx': {{'expected': \"'{role}'\"}}}}")
            errors.append(f"{{'type': 'missing', 'loc': {at}'ChatCompletionRequest{kind}Message', '{field_name}'), "
                          f"'msg': 'Field required', 'input': {message!r}}}")
    if not errors:
        return ""
    return (f"{len(errors)} validation errors:\n  " + "\n  ".join(errors)
            + '\n\n  File "…/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
              "    POST /v1/chat/completions")


def asked_question(body: dict[str, Any]) -> str:
    """The question a request to the model is about: the ``Question:`` line of its first user turn."""
    return re.search(r"^Question: (.*)$", body["messages"][1]["content"], re.MULTILINE).group(1)


def steps_so_far(body: dict[str, Any]) -> int:
    """How many of a run's steps came before this request to the model (the tool results in its prompt)."""
    return sum(message["role"] == "tool" for message in body["messages"])


def openai_wrong_key(key: str) -> ErrorReply:
    """OpenAI's answer to a key it does not take (HTTP 401), the key quoted in its message as the API does (OpenAI
    stars out the key's middle; a proxy or another server in front of a model may quote it whole)."""
    return ErrorReply(401, body={"error": {
        "message": f"Incorrect API key provided: {key}. You can find your API key at "
                   "https://platform.openai.com/account/api-keys.",
        "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})


@dataclass
class RawReply:
    """A body sent as it is, with its own status and content type: a proxy's HTML page answering 200, a JSON
    object of another shape."""

    body: str
    status: int = 200
    content_type: str = "text/html; charset=utf-8"


@dataclass
class FromHeaders:
    """The reply *make* makes from the request's headers: a model (or a proxy in front of it) that repeats what it
    was sent, such as the ``Authorization`` header and the key in it."""

    make: Callable[[Mapping[str, str]], Any]


@dataclass
class SlowReply:
    """Wait *seconds* before sending *reply* (to trigger client timeouts)."""

    seconds: float
    reply: Any


@dataclass
class HeldReply:
    """Send *reply* only once the test sets *release*: a request the test holds at the model until what it
    checks has happened (another run queued, a page closed), however slow the machine.  *arrived* is set when
    the request comes in, *closed* when its client closes the connection while it is held (it then gets no
    reply, as from a real server whose client hung up).  A release that never comes fails the request after
    *limit* seconds."""

    reply: Any
    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)
    closed: threading.Event = field(default_factory=threading.Event)
    limit: float = 300.0


@dataclass
class EndlessReply:
    """A generation that never ends by itself: a small model looping on its own text.

    Streamed, a chunk goes out every *tick* seconds until a write fails (the
    client closed the request): then *noticed* is set and it stops.  Not
    streamed, nothing is written until the test sets *release* (or *limit*
    seconds pass); then *reply* is sent to whoever still listens.  *finished* is
    set when the generation is over, either way.
    """

    reply: Any = field(default_factory=lambda: TextReply("..."))
    tick: float = 0.02
    limit: float = 300.0
    arrived: threading.Event = field(default_factory=threading.Event)
    noticed: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


#: How often a held request looks whether its client closed the connection.
HOLD_LOOK_SECONDS = 0.05

Reply = ToolCallReply | TextReply | ErrorReply | SlowReply | FromHeaders | RawReply | HeldReply | EndlessReply
Script = list[Reply] | Callable[[dict[str, Any]], Reply]


@dataclass
class FakeLLMServer:
    script: Script
    #: When false, a request that carries ``tools`` is refused with HTTP 400,
    #: as endpoints without tool support do.
    supports_tools: bool = True
    #: The one model served, as ``GET /v1/models`` lists it and every completion names it.
    model: str = "scripted-stand-in"
    #: Tokens of context; a longer request gets *server*'s context error.
    context_tokens: int | None = None
    server: str = "vllm"
    #: When false, ``tool_choice`` "required" gets llama-cpp-python's HTTP 500 with an empty message.
    accepts_required: bool = True
    #: When false, an assistant message with ``content`` null gets llama-cpp-python's validation error (500).
    accepts_null_content: bool = True
    #: When false, ``GET /v1/models`` is a 404, as some OpenAI-compatible endpoints answer it.
    lists_models: bool = True
    #: One completion at a time, and ``GET /v1/models`` waits for it, as llama-cpp-python's server serves.
    one_at_a_time: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: How many ``GET /v1/models`` requests were answered.
    model_lists: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _model_lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._server = LoopbackServer(_handler_for(self))

    @property
    def base_url(self) -> str:
        return f"{self._server.base}/v1"

    def close(self) -> None:
        self._server.close()

    def refusal(self, body: dict[str, Any]) -> ErrorReply | None:
        """The error llama-cpp-python's server gives a request it cannot take, if this one is such."""
        if not self.accepts_null_content and (errors := null_content_errors(body)):
            return llama_cpp_python_error(errors)
        if not self.accepts_required and body.get("tools") and body.get("tool_choice") == "required":
            return llama_cpp_python_error("")
        return None

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            if callable(self.script):
                return self.script(body)
            if not self.script:
                return ErrorReply(500, "the test script has no more replies")
            return self.script.pop(0)


def prompt_tokens(body: dict[str, Any]) -> int:
    """About 4 characters a token, as the stand-in counts a request."""
    return max(1, len(json.dumps(body.get("messages", []))) // 4)


def _completion(body: dict[str, Any], reply: ToolCallReply | TextReply, model: str) -> dict[str, Any]:
    if isinstance(reply, ToolCallReply):
        arguments = reply.arguments
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        message = {
            "role": "assistant",
            "content": reply.content or None,
            "tool_calls": [
                {
                    "id": f"call_{time.monotonic_ns()}",
                    "type": "function",
                    "function": {"name": reply.name, "arguments": arguments},
                }
            ],
        }
        finish = "tool_calls"
        completion_text = (reply.content or "") + arguments
    else:
        message = {"role": "assistant", "content": reply.text}
        finish = "stop"
        completion_text = reply.text
    prompt = prompt_tokens(body)
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": max(1, len(completion_text) // 4),
            "total_tokens": prompt + max(1, len(completion_text) // 4),
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def _chunks(body: dict[str, Any], reply: ToolCallReply | TextReply, model: str) -> Iterator[dict[str, Any]]:
    """The reply as OpenAI streams it: a chunk a piece (of about 8 characters), the finish, and the usage."""
    whole = _completion(body, reply, model)
    message = whole["choices"][0]["message"]
    base = {"id": whole["id"], "object": "chat.completion.chunk", "created": whole["created"], "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), 8):
        yield chunk({"content": text[start:start + 8]})
    for index, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"], "arguments": ""}}]})
        arguments = call["function"]["arguments"]
        for start in range(0, len(arguments), 8):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start:start + 8]}}]})
    yield chunk({}, whole["choices"][0]["finish_reason"])
    if (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": whole["usage"]}


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _hold(self, held: HeldReply) -> Any:
            """*held*'s reply once released, an error after its limit, or ``None`` when the client closed the
            connection first (what it would read next is the end of the stream)."""
            deadline = time.monotonic() + held.limit
            while not held.release.wait(HOLD_LOOK_SECONDS):
                if self._client_closed():
                    return None
                if time.monotonic() > deadline:
                    return ErrorReply(500, "the test never released this request")
            return held.reply

        def _client_closed(self) -> bool:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            try:
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:  # reset
                return True

        def _start_events(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

        def _event(self, data: str) -> None:
            """One server-sent event, as one chunk of the chunked body (a closed client fails the write)."""
            payload = f"data: {data}\r\n\r\n".encode()
            self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
            self.wfile.flush()

        def _end_events(self) -> None:
            self._event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _generate(self, body: dict[str, Any], reply: EndlessReply) -> Any:
            """Run an endless generation; the reply to send after it, or ``None`` when nothing is left to send."""
            reply.arrived.set()
            try:
                if not body.get("stream"):
                    reply.release.wait(reply.limit)
                    return reply.reply
                self._start_events()
                deadline = time.monotonic() + reply.limit
                base = {"id": "chatcmpl-endless", "object": "chat.completion.chunk", "created": int(time.time()),
                        "model": server.model}
                while time.monotonic() < deadline and not reply.release.is_set():
                    try:
                        self._event(json.dumps({**base, "choices": [{"index": 0, "delta": {"content": "and "},
                                                                     "finish_reason": None}]}))
                    except OSError:
                        reply.noticed.set()
                        self.close_connection = True
                        return None
                    time.sleep(reply.tick)
                self._end_events()
                return None
            finally:
                reply.finished.set()

        def do_GET(self) -> None:
            if server.one_at_a_time:
                if not server._model_lock.acquire(timeout=300):
                    self._send(503, {"error": {"message": "the model stayed busy", "type": "server_error"}})
                    return
                server._model_lock.release()
            if self.path.rstrip("/").endswith("/models") and server.lists_models:
                with server._lock:
                    server.model_lists += 1
                self._send(200, {"object": "list", "data": [{"id": server.model, "object": "model",
                                                             "created": 0, "owned_by": "stand-in"}]})
                return
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            if server.context_tokens is not None and \
                    prompt_tokens(body) + (body.get("max_tokens") or 0) > server.context_tokens:
                with server._lock:
                    server.requests.append(body)
                refusal = CONTEXT_ERRORS[server.server](server.context_tokens, prompt_tokens(body))
                self._send(refusal.status, refusal.body)
                return
            if body.get("tools") and not server.supports_tools:
                with server._lock:
                    server.requests.append(body)
                self._send(400, {"error": {
                    "message": '"auto" tool choice requires --enable-auto-tool-choice to be set',
                    "type": "BadRequestError", "param": None, "code": 400}})
                return
            refusal = server.refusal(body)
            if refusal is not None:
                with server._lock:
                    server.requests.append(body)
                self._send(refusal.status, refusal.body)
                return
            if not server.one_at_a_time:
                self._answer(body)
                return
            with server._model_lock:
                self._answer(body)

        def _answer(self, body: dict[str, Any]) -> None:
            reply = server.next_reply(body)
            while isinstance(reply, SlowReply | FromHeaders | HeldReply | EndlessReply):
                if isinstance(reply, EndlessReply):
                    reply = self._generate(body, reply)
                    if reply is None:
                        return
                    continue
                if isinstance(reply, FromHeaders):
                    reply = reply.make(self.headers)
                    continue
                if isinstance(reply, HeldReply):
                    reply.arrived.set()
                    outcome = self._hold(reply)
                    if outcome is None:
                        reply.closed.set()
                        self.close_connection = True
                        return
                    reply = outcome
                    continue
                time.sleep(reply.seconds)
                reply = reply.reply
            if isinstance(reply, RawReply):
                data = reply.body.encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if isinstance(reply, ErrorReply):
                headers = {}
                if reply.retry_after is not None:
                    headers["Retry-After"] = f"{reply.retry_after:g}"
                self._send(reply.status, reply.body or {"error": {"message": reply.message, "type": "server_error"}},
                           headers)
                return
            if not body.get("stream"):
                self._send(200, _completion(body, reply, server.model))
                return
            self._start_events()
            for chunk in _chunks(body, reply, server.model):
                self._event(json.dumps(chunk))
            self._end_events()

    return Handler


@pytest.fixture
def llm_server() -> Iterator[Callable[..., FakeLLMServer]]:
    """A factory: ``llm_server(script, supports_tools=True, ...)`` starts a server, closed after the test."""
    servers: list[FakeLLMServer] = []

    def start(script: Script, supports_tools: bool = True, **options: Any) -> FakeLLMServer:
        server = FakeLLMServer(script=script, supports_tools=supports_tools, **options)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
