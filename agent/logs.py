"""Log lines a reader can trust: one record, one line, whatever a request or a model put in it.

A question, a dataset IRI, a model's answer or an endpoint's error body may
hold a line break followed by something that reads as a line of the program's
own (``…\\n2026-11-28 12:00:00,000 INFO serve.text2sparql: FORGED``), an
escape sequence for the operator's terminal (``\\x1b]0;pwned\\x07`` retitles
it), a bidi override that shows the line's end before its start, or a secret.
:class:`LogFormatter` is the one place that stops them all, so no call site
has to remember to: every argument of a record and then its whole message are

* masked of secrets (:func:`agent.redact.redact`),
* cut to a bound (:data:`VALUE_CHARS` an argument, :data:`MESSAGE_CHARS` the
  message), and
* escaped visibly (:func:`escape`): ``\\n``, ``\\r``, ``\\t``, ``\\x1b``,
  ``\\u202e``, … for every control (C0, DEL, C1), format (Unicode's Cf: bidi
  controls, zero-width characters) and line or paragraph separator character.

A traceback (or a stack) is the program's own, so it keeps its lines, each
escaped and masked on its own and written after the record's own prefix and
``| ``; the exception's message is one escaped line like any other value.
Every line of the log thus starts with the time, the level and the logger.
"""

from __future__ import annotations

import logging
import numbers
import traceback
import unicodedata
from collections.abc import Iterator, Mapping
from typing import Any

from agent.redact import redact

#: The format of every line: the time, the level and the logger, then the message.
LINE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Characters of one argument of a record kept (a question, a model's answer, an error body).
VALUE_CHARS = 1000
#: Characters of a record's whole message kept, and of an exception's message.
MESSAGE_CHARS = 4000
#: How a cut value ends.
CUT = "…"
#: Loggers whose lines stay below INFO: the HTTP clients' request logs print full URLs.
HTTP_LOGGERS = ("httpx", "httpcore", "httpx2", "openai", "urllib3", "requests")
#: Control, format and separator characters: never written raw.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: str) -> str:
    """*text* with every control, format (bidi, zero-width) and line or paragraph separator character written as
    its escape (``\\n``, ``\\x1b``, ``\\u202e``, ``\\U000e0001``); everything else, backslashes included, as is."""
    if text.isprintable():  # the usual case: no control, format or separator character at all
        return text
    return "".join(_escaped(char) if unicodedata.category(char) in _ESCAPED_CATEGORIES else char for char in text)


def _escaped(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str, limit: int) -> str:
    """*text* as a log line may hold it: secrets masked, cut to *limit* characters, escaped."""
    text = redact(text)  # before the cut, which could leave a secret's first half
    if len(text) > limit:
        text = text[:limit] + f"{CUT} ({len(text) - limit} more characters)"
    return escape(text)


def _argument(value: Any) -> Any:
    """An argument of a record as the message may take it: numbers as they are (``%d``, ``%.1f``), anything else
    as its text, shown."""
    if value is None or isinstance(value, numbers.Number):
        return value
    return shown(str(value), VALUE_CHARS)


def message(record: logging.LogRecord) -> str:
    """*record*'s message on one line, each argument shown and then the whole message."""
    arguments = record.args
    if isinstance(arguments, Mapping):
        arguments = {key: _argument(value) for key, value in arguments.items()}
    elif arguments:
        arguments = tuple(_argument(value) for value in arguments)
    text = str(record.msg)
    if arguments:
        try:
            text = text % arguments
        except (TypeError, ValueError, KeyError):  # a call that did not match its format: both, as logging would
            text = f"{text} {arguments!r}"
    return shown(text, MESSAGE_CHARS)


def exception_lines(error: BaseException) -> Iterator[str]:
    """The lines of *error*'s traceback, chained exceptions first, as Python prints them: each frame's lines the
    program's own, the exception's message one line."""
    chained = [error]
    while True:
        cause = chained[0].__cause__ or (None if chained[0].__suppress_context__ else chained[0].__context__)
        if cause is None or cause in chained:
            break
        chained.insert(0, cause)
    for index, current in enumerate(chained):
        if index:
            yield ("The above exception was the direct cause of the following exception:"
                   if current.__cause__ is chained[index - 1] else
                   "During handling of the above exception, another exception occurred:")
        if current.__traceback__ is not None:
            yield "Traceback (most recent call last):"
            for frame in traceback.format_tb(current.__traceback__):
                yield from (shown(line, MESSAGE_CHARS) for line in frame.rstrip("\n").split("\n"))
        kind = type(current)
        name = kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else \
            f"{kind.__module__}.{kind.__qualname__}"
        try:
            text = str(current)
        except Exception:  # an exception whose str() fails, as traceback says it
            text = "<exception str() failed>"
        yield f"{name}: {shown(text, MESSAGE_CHARS)}" if text else name
        for note in getattr(current, "__notes__", None) or ():
            yield shown(str(note), MESSAGE_CHARS)


class LogFormatter(logging.Formatter):
    """One line a record, every value in it masked, bounded and escaped; a traceback's lines each after the record's
    prefix and ``| ``."""

    def __init__(self, fmt: str = LINE_FORMAT, datefmt: str | None = None) -> None:
        super().__init__(fmt, datefmt)

    def format(self, record: logging.LogRecord) -> str:
        line = logging.makeLogRecord(record.__dict__)  # the record itself is left as it came, for other handlers
        line.msg, line.args = message(record), None
        line.exc_info = line.exc_text = line.stack_info = None
        first = super().format(line)
        more = list(self._block(record))
        if not more:
            return first
        line.msg = ""
        prefix = super().format(line) + "| "
        return "\n".join([first, *(prefix + text for text in more)])

    def _block(self, record: logging.LogRecord) -> Iterator[str]:
        error = _exception_of(record.exc_info)
        if error is not None:
            yield from exception_lines(error)
        elif record.exc_text and not record.exc_info:  # a record formatted elsewhere (in another process, say)
            yield from (shown(text, MESSAGE_CHARS) for text in record.exc_text.split("\n"))
        if record.stack_info:
            yield from (shown(text, MESSAGE_CHARS) for text in record.stack_info.split("\n"))


def _exception_of(exc_info: Any) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3 and isinstance(exc_info[1], BaseException):
        return exc_info[1]
    return None


_handler: logging.Handler | None = None


def install(level: int = logging.INFO) -> logging.Handler:
    """Log to stderr through :class:`LogFormatter`, Python's warnings included, the HTTP clients' request logs kept
    below INFO; the handler.

    Called again in the same process (a program run from Python more than once), it replaces its own handler,
    which writes to ``sys.stderr`` as it is now, so no line is written twice.
    """
    global _handler
    root = logging.getLogger()
    if _handler is not None:
        root.removeHandler(_handler)
    _handler = logging.StreamHandler()
    _handler.setFormatter(LogFormatter())
    root.addHandler(_handler)
    root.setLevel(level)
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
    logging.captureWarnings(True)  # a warning's text (its source line, its message) is a record like any other
    return _handler
