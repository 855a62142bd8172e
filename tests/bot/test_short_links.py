"""Short links followed through a stand-in shortener on loopback that answers as w.wiki does: a redirect, a 404,
or, when busy, 429 with ``Retry-After``."""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler

import pytest

from bot.forum import Request
from bot.short_links import ShortLinks
from tests.support.euler import EULER_ADVISORS_QUERY
from tests.support.loopback import LoopbackServer

TARGET = "https://query.wikidata.org/#" + urllib.parse.quote(EULER_ADVISORS_QUERY, safe="")


class Busy(BaseHTTPRequestHandler):
    """``/Slow…`` answers 429 with ``Retry-After: 120`` (the shortener under load), ``/Once…`` answers 429 with
    ``Retry-After: 1`` the first time and the redirect after, anything else the redirect; every request is
    recorded with its time."""

    seen: list[tuple[float, str]] = []
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 (http.server's name)
        with self.lock:
            earlier = [path for _, path in self.seen if path == self.path]
            self.seen.append((time.monotonic(), self.path))
        if self.path.startswith("/Slow") or (self.path.startswith("/Once") and not earlier):
            self.send_response(429)
            self.send_header("Retry-After", "120" if self.path.startswith("/Slow") else "1")
        else:
            self.send_response(301)
            self.send_header("Location", TARGET)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def shortener():
    Busy.seen = []
    server = LoopbackServer(Busy)
    yield server
    server.close()


def request(text: str) -> tuple[Request, str]:
    return Request(heading="Euler", question=text), text


def test_a_busy_answer_is_asked_again_after_its_retry_after(shortener):
    links = ShortLinks(shortener.base)
    resolved = links.resolve(*request("See https://w.wiki/Once1"))
    assert resolved.queries == [EULER_ADVISORS_QUERY]
    (first, _), (second, _) = Busy.seen
    assert second - first >= 1.0  # the shortener's Retry-After was honoured


def test_a_shortener_asking_to_wait_minutes_delays_a_question_by_its_cap_not_by_minutes(shortener, caplog):
    links = ShortLinks(shortener.base, question_wait=2.0, pass_wait=3.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="bot.short_links"):
        resolved = links.resolve(*request("https://w.wiki/Slow1 https://w.wiki/Slow2 https://w.wiki/AbC1"))
    # Retry-After: 120 is more than the question may wait: no second request to the busy shortener, and no
    # request at all before its Retry-After has passed (the other links are left as text too)
    assert [path for _, path in Busy.seen] == ["/Slow1"]
    assert resolved.queries == [] and time.monotonic() - started < 60
    assert "must wait 120 s for the shortener, more than the 2 s this question may still wait" in caplog.text


def test_the_cap_of_a_pass_spans_its_questions(shortener):
    links = ShortLinks(shortener.base, question_wait=1.5, pass_wait=2.5)
    assert links.resolve(*request("https://w.wiki/Once1")).queries == [EULER_ADVISORS_QUERY]  # waits 1 s
    assert links.resolve(*request("https://w.wiki/Once2")).queries == [EULER_ADVISORS_QUERY]  # waits 1 s
    assert links.resolve(*request("https://w.wiki/Once3")).queries == []  # 0.5 s left in this pass
    links.new_pass()
    assert links.resolve(*request("https://w.wiki/Once3")).queries == [EULER_ADVISORS_QUERY]
