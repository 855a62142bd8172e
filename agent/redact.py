"""Secrets out of everything the bot and the service keep or show: what services answer, the log, the state,
the replies, the API's answers and the chat page.

An endpoint's error body may echo the API key it was sent, a query service
may repeat the request's ``Authorization: Basic …`` header, and a configured
URL may carry ``user:password@``.  Every secret a program holds is registered
when it is read (:func:`remember`, :func:`remember_url`,
:func:`remember_environment`), with the forms it travels in (base64,
percent-encoded, ``user:password``), and:

* every answer of the model and the knowledge base passes through
  :func:`scrub` before the agent sees it (:class:`Scrubbed`), so no secret
  reaches a prompt, an observation, a trace, the state, a reply or an answer
  of the service;
* every message the program writes (log, stderr, ``last_error``) passes
  through :func:`redact`, which also masks the usual shapes of keys; the log
  does so by its formatter (:mod:`agent.logs`).
"""

from __future__ import annotations

import base64
import dataclasses
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

MASK = "[redacted]"
#: Values read from the environment or key files at start-up.
_known: set[str] = set()
#: (pattern, replacement): the part before the secret is kept, so the message still says where it was.
_SHAPES = [
    (re.compile(r"(://)[^/\s:@]+:[^/\s@]+@"), r"\1" + MASK + "@"),                   # user:password@host
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"), MASK),                          # OpenAI-style keys
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-.=+/]{8,}"), r"\1" + MASK),              # Authorization: Bearer
    (re.compile(r"(?i)([?&](?:key|api_key|apikey|token|access_token|password)=)[^&\s\"']+"), r"\1" + MASK),
]
#: The model's key, as the environment holds it.
SECRET_KEYS = ("OPENAI_API_KEY",)
#: Configured addresses whose credentials (``user:password@``) are secrets.
SECRET_URLS = ("OPENAI_BASE_URL", "WIKIDATA_API_URL", "WIKIDATA_SPARQL_URL", "SPINACH_BOT_API_URL")


def _forms(secret: str) -> set[str]:
    """*secret* as it may travel: as is, percent-decoded and -encoded, and base64 (padded or not)."""
    forms = {secret, urllib.parse.unquote(secret), urllib.parse.quote(secret, safe="")}
    for form in list(forms):
        for encoded in (base64.b64encode(form.encode()).decode(), base64.urlsafe_b64encode(form.encode()).decode()):
            forms |= {encoded, encoded.rstrip("=")}
    return {form for form in forms if len(form) >= 4}


def remember(secret: str | None) -> None:
    """Register a secret value (and its encoded forms) so that it is masked wherever it appears later."""
    if secret and len(secret.strip()) >= 4:
        _known.update(_forms(secret.strip()))


def remember_url(url: str | None) -> None:
    """Register the credentials of a configured URL: the password, and ``user:password`` (Basic auth)."""
    parts = urllib.parse.urlsplit(url or "")
    if parts.password:
        remember(parts.password)
        remember(f"{urllib.parse.unquote(parts.username or '')}:{urllib.parse.unquote(parts.password)}")
        remember(f"{parts.username or ''}:{parts.password}")


def remember_environment(environ: Mapping[str, str]) -> None:
    """Register the secrets *environ* configures: the model's key and the credentials of every address."""
    for name in SECRET_KEYS:
        remember(environ.get(name))
    for name in SECRET_URLS:
        remember_url(environ.get(name))


def scrub(value: Any) -> Any:
    """*value* (text, or lists, dicts and dataclasses of them) with every known secret masked; nothing else
    changes, so what the services answer stays usable."""
    if not _known:
        return value
    if isinstance(value, str):
        for secret in sorted(_known, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, list):
        return [scrub(item) for item in value]
    if isinstance(value, tuple):
        return tuple(scrub(item) for item in value)
    if isinstance(value, dict):
        return {scrub(key): scrub(item) for key, item in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{field.name: scrub(getattr(value, field.name))
                                             for field in dataclasses.fields(value) if field.init})
    return value


class Scrubbed:
    """*inner* (the agent's model or knowledge base) with every answer, and every error's message, scrubbed."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return scrub(found(*args, **kwargs))
            except Exception as error:
                message = str(error)
                if scrub(message) == message:
                    raise
                try:
                    clean = type(error)(scrub(message))
                except Exception:  # an error class with another signature: its message, as a plain error
                    clean = RuntimeError(scrub(message))
                raise clean from None

        return call


def redact(text: str) -> str:
    """*text* with every known secret and every key-shaped or credential-shaped string masked."""
    text = scrub(text)
    for shape, replacement in _SHAPES:
        text = shape.sub(replacement, text)
    return text
