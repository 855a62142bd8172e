"""Secrets masked in what the services answer and in what the bot and the service write, in every form they travel
in."""

import base64
from dataclasses import dataclass

import pytest

from agent import redact
from agent.kb.base import KBUnavailable, QueryResult
from agent.redact import MASK, Scrubbed, remember, remember_url, scrub


@pytest.fixture(autouse=True)
def forgotten(monkeypatch):
    monkeypatch.setattr(redact, "_known", set())


def test_a_urls_credentials_are_masked_plain_percent_encoded_and_as_basic_auth():
    remember_url("https://reader:p%40ss-w0rd@query.example/sparql")
    basic = base64.b64encode(b"reader:p@ss-w0rd").decode()
    for echoed in ("p@ss-w0rd", "p%40ss-w0rd", f"Authorization: Basic {basic}", f"Basic {basic.rstrip('=')}",
                   "reader:p@ss-w0rd"):
        assert "ss-w0rd" not in scrub(echoed) and basic.rstrip("=") not in scrub(echoed) and MASK in scrub(echoed)
    assert scrub("reader") == "reader"  # a user name alone is no secret


@dataclass(frozen=True)
class Answer:
    text: str
    rows: list


def test_answers_are_scrubbed_through_lists_dicts_and_dataclasses_and_nothing_else_changes():
    remember("sk-secret-key-123")
    answer = Answer("error: key sk-secret-key-123 refused", [{"x": {"value": "sk-secret-key-123"}}, ("a", 1)])
    assert scrub(answer) == Answer(f"error: key {MASK} refused", [{"x": {"value": MASK}}, ("a", 1)])
    assert scrub(QueryResult(status="error", message="c2stc2VjcmV0LWtleS0xMjM= echoed")).message == f"{MASK} echoed"


class KnowledgeBase:
    def execute(self, sparql, timeout=None):
        return QueryResult(status="error", message=f"Bad request from Basic {sparql}")

    def search(self, text):
        raise KBUnavailable(f"cannot reach https://u:{text}@host")


def test_a_scrubbed_service_answers_and_fails_as_the_service_does_without_the_secret():
    remember("hunter22-secret")
    kb = Scrubbed(KnowledgeBase())
    assert kb.execute("hunter22-secret").message == f"Bad request from Basic {MASK}"
    with pytest.raises(KBUnavailable, match=r"\[redacted\]") as raised:
        kb.search("hunter22-secret")
    assert "hunter22" not in str(raised.value)


def test_the_environments_secrets_are_registered_the_key_and_every_addresss_credentials():
    redact.remember_environment({"OPENAI_API_KEY": "model-key-1234", "SPINACH_MODEL": "gpt-4o",
                                 "WIKIDATA_SPARQL_URL": "https://reader:pass-5678@query.example/sparql"})
    assert scrub("model-key-1234 pass-5678 gpt-4o reader") == f"{MASK} {MASK} gpt-4o reader"
