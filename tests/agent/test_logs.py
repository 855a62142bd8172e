"""Every log line of the bot and the service is one line whatever a request or a model put in it: escaped, bounded
and masked of secrets, a traceback's lines each after the record's own prefix.

Each test logs through the handler the programs install (:func:`agent.logs.install`) and reads their stderr.
"""

import base64
import io
import logging
import re
import unicodedata
import urllib.parse
import warnings

import pytest

from agent import logs, redact
from agent.logs import MESSAGE_CHARS, VALUE_CHARS, escape
from agent.redact import MASK, remember

KEY = "sk-logs/test+key=77"
FORGED = "2026-11-28 12:00:00,000 INFO serve.text2sparql: FORGED"
TERMINAL = "\x1b]0;pwned\x07\u202etxt.exe"
OWN_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


@pytest.fixture
def stderr(monkeypatch):
    """The programs' log handler, its stream this test's; the function gives the lines written so far."""
    monkeypatch.setattr(redact, "_known", set())
    handler = logs.install(logging.INFO)
    handler.setStream(stream := io.StringIO())
    yield lambda: stream.getvalue().split("\n")[:-1]
    logging.getLogger().removeHandler(handler)
    logging.captureWarnings(False)
    monkeypatch.setattr(logs, "_handler", None)


def assert_own_lines(lines: list[str]) -> None:
    for line in lines:
        assert OWN_LINE.match(line) and not line.startswith(FORGED[:23]), line
        assert not [char for char in line if unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")], line


@pytest.mark.parametrize("text, shown", [
    ("plain text, a path C:\\temp\\n and ünïcödé 🙂", "plain text, a path C:\\temp\\n and ünïcödé 🙂"),
    ("a\nb\rc\td", "a\\nb\\rc\\td"),
    ("\x00\x07\x1b[31m\x7f", "\\x00\\x07\\x1b[31m\\x7f"),
    ("\x85\x9b", "\\x85\\x9b"),  # C1: next line, control sequence introducer
    ("\u2028\u2029", "\\u2028\\u2029"),
    ("\u202e\u2066\u200b\u200d\ufeff\u061c", "\\u202e\\u2066\\u200b\\u200d\\ufeff\\u061c"),
    ("\U000e0041\U0001bca0", "\\U000e0041\\U0001bca0"),  # tag and shorthand format characters
    ("\ud800", "\\ud800"),  # a lone surrogate
    ("no\u00a0break", "no\u00a0break"),  # a space is no control
])
def test_escape_writes_each_control_format_and_separator_character_visibly(text, shown):
    assert escape(text) == shown


def test_a_message_and_its_arguments_are_one_line_and_keep_their_formats(stderr):
    log = logging.getLogger("serve.text2sparql")
    log.info("%d rows in %.1f s: %s", 3, 1.25, f"asked\n{FORGED}{TERMINAL}")
    log.warning(f"built by the caller: {FORGED}\r\n{FORGED}")
    log.info("%(graph)s: %(question)s", {"graph": "library", "question": f"x\u2028{FORGED}"})
    lines = stderr()
    assert len(lines) == 3
    assert_own_lines(lines)
    assert lines[0].endswith(f"INFO serve.text2sparql: 3 rows in 1.2 s: asked\\n{FORGED}\\x1b]0;pwned\\x07"
                             "\\u202etxt.exe")
    assert lines[1].endswith(f"built by the caller: {FORGED}\\r\\n{FORGED}")
    assert lines[2].endswith(f"library: x\\u2028{FORGED}")


def test_what_a_record_holds_is_bounded(stderr):
    logging.getLogger("serve").info("question: %s; answer: %s", "q" * 50000, "a" * 10)
    logging.getLogger("serve").info("built: " + "b" * 50000)
    first, second = stderr()
    assert f"question: {'q' * VALUE_CHARS}… ({50000 - VALUE_CHARS} more characters); answer: aaaaaaaaaa" in first
    assert len(second) < MESSAGE_CHARS + 100 and second.endswith("more characters)")


def test_a_secret_is_masked_in_every_form_and_never_half_shown_by_a_cut(stderr):
    remember(KEY)
    forms = [KEY, urllib.parse.quote(KEY, safe=""), base64.b64encode(KEY.encode()).decode(),
             base64.urlsafe_b64encode(KEY.encode()).decode().rstrip("=")]
    log = logging.getLogger("serve")
    for form in forms:
        log.warning("the endpoint said: Incorrect API key provided: %s", form)
    log.warning("cut: %s", "x" * (VALUE_CHARS - 6) + KEY)
    log.warning(f"in the message itself: Bearer {KEY}")
    lines = stderr()
    assert len(lines) == len(forms) + 2
    assert all(line.endswith(f"Incorrect API key provided: {MASK}") for line in lines[:len(forms)])
    assert "sk-log" not in lines[-2] and not any(form in "\n".join(lines) for form in forms)
    assert lines[-1].endswith(f"in the message itself: Bearer {MASK}")


def test_a_traceback_keeps_its_lines_after_the_records_prefix_and_its_messages_are_one_line_each(stderr):
    remember(KEY)
    try:
        try:
            raise ValueError(f"inner {KEY}\n{FORGED}")
        except ValueError as error:
            raise RuntimeError(f"outer {TERMINAL}") from error
    except RuntimeError:
        logging.getLogger("serve.chat").exception("chat: the run failed for %s", f"a question\n{FORGED}")
    lines = stderr()
    assert_own_lines(lines)
    assert KEY not in "\n".join(lines)
    prefix = lines[0][:lines[0].index("serve.chat: ") + len("serve.chat: ")]
    assert lines[0] == f"{prefix}chat: the run failed for a question\\n{FORGED}"
    block = [line.removeprefix(prefix + "| ") for line in lines[1:]]
    assert all(line.startswith(prefix + "| ") for line in lines[1:])
    assert block[0] == "Traceback (most recent call last):"
    assert block[1].startswith('  File "') and block[1].endswith("in test_a_traceback_keeps_its_lines_after_the_"
                                                                 "records_prefix_and_its_messages_are_one_line_each")
    assert block[2].strip() == 'raise ValueError(f"inner {KEY}\\n{FORGED}")'
    assert f"ValueError: inner {MASK}\\n{FORGED}" in block
    assert "The above exception was the direct cause of the following exception:" in block
    assert block[-1] == "RuntimeError: outer \\x1b]0;pwned\\x07\\u202etxt.exe"


def test_a_stack_and_an_exception_logged_outside_a_handler_keep_their_lines(stderr):
    logging.getLogger("bot").warning("where am I", stack_info=True)
    logging.getLogger("bot").error("no exception here", exc_info=True)
    lines = stderr()
    assert_own_lines(lines)
    assert lines[1].endswith("WARNING bot: | Stack (most recent call last):")
    assert lines[-1].endswith("ERROR bot: no exception here")


def test_a_warning_is_a_record_like_any_other(stderr):
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn_explicit(f"odd input\n{FORGED}{TERMINAL}", UserWarning, "library.py", 7)
    lines = stderr()
    assert_own_lines(lines)
    assert len(lines) == 1 and f"WARNING py.warnings: library.py:7: UserWarning: odd input\\n{FORGED}" in lines[0]
