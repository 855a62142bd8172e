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
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
from openai.types.chat import ChatCompletion

DEFAULT_MODEL = "gpt-4o"


class LLMUnavailable(RuntimeError):
    """The endpoint could not produce a completion (after the client's retries)."""


class LLMConfigurationError(ValueError):
    """Neither an API key nor an endpoint is configured."""


class ToolsUnsupported(RuntimeError):
    """The endpoint refused a request because it carried tool definitions."""


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


#: A surrogate code point: in a Python string (pairs are already joined), always a lone one.
_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """*text* with each lone surrogate (valid in JSON's ``\\ud800``, not in UTF-8) replaced by U+FFFD.

    A model may write one; sent back in the next prompt, stored or posted, it would fail to encode.
    """
    return _SURROGATE.sub("\ufffd", text)


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

    def __init__(self, client: openai.OpenAI, model: str | None = DEFAULT_MODEL) -> None:
        self.client = client
        self.model = model

    def resolve_model(self) -> str:
        """The model requests name: the configured one, else the one the endpoint serves (asked once).

        Raises :class:`LLMConfigurationError` when the endpoint lists none, or
        several, or cannot say.
        """
        if self.model is None:
            self.model = served_model(self.client)
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
        client = openai.OpenAI(
            api_key=config.api_key or "no-key-needed",
            base_url=config.base_url,
            timeout=config.timeout,
            max_retries=config.max_retries,
        )
        return cls(client, config.model)

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        temperature: float,
        top_p: float | None = None,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> Completion:
        """One completion; with *tools*, exactly one tool call is asked for (no parallel calls)."""
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
            request["tool_choice"] = "required"
            request["parallel_tool_calls"] = False
        try:
            # The body is plain JSON already: ``chat.completions.create`` would first walk every message through
            # the SDK's typed-parameter transform (each against the union of message types, milliseconds a
            # message), which found nothing to convert and took most of a replayed run's time.  The client's
            # own ``post`` sends the same body with the same retries, timeout and errors.
            response = self.client.post("/chat/completions", body=request, cast_to=ChatCompletion)
        except openai.BadRequestError as error:
            if _CONTEXT_TOO_LONG.search(str(error)):
                raise ContextTooLong(f"the prompt does not fit the model's context: {error}") from error
            if tools and "tool" in str(error).lower():
                raise ToolsUnsupported(str(error)) from error
            raise LLMUnavailable(f"the endpoint refused the request: {error}") from error
        except openai.APIError as error:
            raise LLMUnavailable(f"{type(error).__name__}: {error}") from error
        if not response.choices:
            raise LLMUnavailable("the endpoint answered with no choices")
        message = response.choices[0].message
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


def served_model(client: openai.OpenAI) -> str:
    """The one model an endpoint lists (``GET /models``), as vLLM, llama.cpp's server and Ollama answer it."""
    try:
        models = [model.id for model in client.models.list()]
    except openai.APIError as error:
        raise LLMConfigurationError(f"no model was named, and the endpoint did not say which it serves "
                                    f"({type(error).__name__}: {error}); name one with --model or SPINACH_MODEL")
    if len(models) != 1:
        raise LLMConfigurationError(f"no model was named and the endpoint serves {len(models)} "
                                    f"({', '.join(models[:10]) or 'none'}); name one with --model or SPINACH_MODEL")
    return models[0]
