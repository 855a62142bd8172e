"""A loopback HTTP proxy that injects faults in front of MediaWiki, the model or the query service.

The bot is pointed at the proxy instead of the service; the proxy forwards
each request unchanged unless a :class:`Fault` matches it.  A fault can
answer in the service's place (an HTTP error, an API error body, a body that
is not JSON, an error repeating a request header), hold the connection and
drop it (after a while, or when the test releases it: :class:`Hold`), run a
callback before or after forwarding (a human edit racing the bot's save, a
SIGKILL of the bot once the wiki has accepted its edit), forget
the client's session, or be armed for a number of matching requests.
:meth:`FaultProxy.refuse` closes the listening socket for a while, so the
client meets a refused connection.  Every fault that fired is counted.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.loopback import LoopbackServer

Params = dict[str, str]


@dataclass
class Reply:
    """What the proxy sends instead of the service's answer."""

    status: int = 200
    body: bytes | str | dict = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hold:
    """Hold the request, unanswered, until the test sets *release* (or *limit* seconds pass), then close the
    connection: a service that never answers in time, made rather than hoped for.  *arrived* is set when the
    request comes in."""

    release: threading.Event = field(default_factory=threading.Event)
    arrived: threading.Event = field(default_factory=threading.Event)
    limit: float = 300.0


@dataclass
class Rewrite:
    """Forward the request with its form parameters changed (as a wiki that stores something else would)."""

    change: Callable[[Params], Params]


@dataclass
class EchoHeader:
    """Answer with *status* and a body that repeats the request's *header* (as a careless service's error does)."""

    header: str
    status: int = 400
    template: str = "Bad request from {value}"


@dataclass
class ExpireSession:
    """Forward the request as if the server had forgotten the client's session: the session cookies of the first
    request seen (MediaWiki's ``…_session`` and a BotPassword's ``…_BPsession``) are replaced, in every request
    that still carries them, by ones the server does not know (a session the server hands out later goes
    through)."""

    forgotten: set[str] = field(default_factory=set)
    seen: bool = False

    def cookie(self, header: str) -> str:
        pieces = [piece.strip().partition("=") for piece in header.split(";")]
        if not self.seen:
            self.seen = True
            self.forgotten = {value for name, _, value in pieces if name.lower().endswith("session")}
        return "; ".join(f"{name}={'expired' + value if value in self.forgotten else value}"
                         for name, _, value in pieces)


def api_error(code: str, info: str = "", retry_after: float | None = None) -> Reply:
    """A MediaWiki Action API error, as MediaWiki sends it (HTTP 200, ``error`` object, ``MediaWiki-API-Error``)."""
    headers = {"MediaWiki-API-Error": code}
    if retry_after is not None:
        headers["Retry-After"] = str(int(retry_after))
    body: dict[str, Any] = {"error": {"code": code, "info": info or code, "*": ""}, "servedby": "fault-proxy"}
    if code == "maxlag":
        body["error"].update(host="db1", lag=retry_after or 1, type="db")
    return Reply(200, body, headers)


@dataclass
class Fault:
    """*action* for the next *times* requests that *match*: a :class:`Reply`, ``"drop"`` or a callback.

    A callback gets the request's parameters and is run before the request is
    forwarded (``when="before"``), or after the service answered and before
    the answer is passed on (``when="after"``).  A :class:`Rewrite` changes
    the request's form parameters before they are forwarded.
    """

    name: str
    match: Callable[[str, Params], bool]
    action: Reply | Rewrite | EchoHeader | ExpireSession | Hold | str | Callable[[Params], object]
    times: int = 1
    when: str = "before"
    #: For "drop": how long the connection is held before it is closed without an answer.
    hold_seconds: float = 0.0
    fired: int = 0


def wiki_action(action: str, **wanted: str) -> Callable[[str, Params], bool]:
    """Matches Action API requests with ``action=...`` and the given parameter values (``"*"``: present)."""

    def match(path: str, params: Params) -> bool:
        return params.get("action") == action and all(
            name in params if value == "*" else params.get(name) == value for name, value in wanted.items())

    return match


def path_contains(fragment: str) -> Callable[[str, Params], bool]:
    return lambda path, params: fragment in path


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname, parts.port or 80
        self.faults: list[Fault] = []
        self.fired: list[str] = []
        self.requests: list[Params] = []
        self._lock = threading.Lock()
        self._server: LoopbackServer | None = None
        self.port = 0
        self._start()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def pending(self) -> int:
        with self._lock:
            return sum(fault.times - fault.fired for fault in self.faults)

    def refuse(self, seconds: float) -> None:
        """Close the listening socket for *seconds* (connections are refused), then listen again."""
        self._stop()
        with self._lock:
            self.fired.append("refused connection")
        time.sleep(seconds)
        self._start(self.port)

    def close(self) -> None:
        self._stop()

    def _start(self, port: int = 0) -> None:
        self._server = LoopbackServer(_handler_for(self), port)
        self.port = self._server.port

    def _stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    def _take(self, path: str, params: Params, when: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.when == when and fault.fired < fault.times and fault.match(path, params):
                    fault.fired += 1
                    self.fired.append(fault.name)
                    return fault
        return None

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, list, bytes]:
        connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=300)
        try:
            connection.request(method, path, body=body or None, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()


def _params(path: str, headers: Any, body: bytes) -> Params:
    params = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(path).query, keep_blank_values=True))
    if "application/x-www-form-urlencoded" in headers.get("Content-Type", ""):
        params.update(urllib.parse.parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    elif "multipart/form-data" in headers.get("Content-Type", ""):
        for part in body.split(b"--")[1:]:
            head, _, value = part.partition(b"\r\n\r\n")
            name = head.split(b'name="', 1)[-1].split(b'"', 1)[0].decode("utf-8", "replace")
            if name and value:
                params[name] = value[:-2].decode("utf-8", "replace") if value.endswith(b"\r\n") else value.decode(
                    "utf-8", "replace")
    return params


def _handler_for(proxy: FaultProxy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, reply: Reply) -> None:
            body = reply.body
            if isinstance(body, dict):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            self.send_response(reply.status)
            headers = {"Content-Type": "application/json; charset=utf-8", **reply.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            params = _params(self.path, self.headers, body)
            with proxy._lock:
                proxy.requests.append(params)
            fault = proxy._take(self.path, params, "before")
            if fault is not None:
                if isinstance(fault.action, Reply):
                    self._send(fault.action)
                    return
                if isinstance(fault.action, Hold):
                    fault.action.arrived.set()
                    fault.action.release.wait(fault.action.limit)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault.action == "drop":
                    time.sleep(fault.hold_seconds)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if isinstance(fault.action, EchoHeader):
                    value = self.headers.get(fault.action.header, "")
                    self._send(Reply(fault.action.status, fault.action.template.format(value=value),
                                     {"Content-Type": "text/plain"}))
                    return
                if isinstance(fault.action, Rewrite):
                    body = urllib.parse.urlencode(fault.action.change(params)).encode()
                elif not isinstance(fault.action, ExpireSession):
                    fault.action(params)
            headers = {name: value for name, value in self.headers.items()
                       if name.lower() not in ("host", "connection", "keep-alive", "proxy-connection",
                                               "content-length")}
            if fault is not None and isinstance(fault.action, ExpireSession) and "Cookie" in headers:
                headers["Cookie"] = fault.action.cookie(headers["Cookie"])
            headers["Content-Length"] = str(len(body))
            headers["Host"] = f"{proxy.upstream_host}:{proxy.upstream_port}"
            status, response_headers, answer = proxy._forward(self.command, self.path, headers, body)
            after = proxy._take(self.path, params, "after")
            if after is not None and callable(after.action):
                after.action(params)
            self.send_response(status)
            for name, value in response_headers:
                if name.lower() not in ("transfer-encoding", "connection", "content-length", "keep-alive"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        do_GET = _handle
        do_POST = _handle

    return Handler
