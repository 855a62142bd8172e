"""``spinach-serve``'s command line: each bad argument is one clear line and exit status 2, before any port opens."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("arguments, environment, message", [
    ((), {}, "error: no language model is configured"),
    (("--graph", "wikidata"), {"OPENAI_API_KEY": "k"}, "error: --graph 'wikidata': write it as NAME=SOURCE"),
    (("--graph", "mine=/nowhere/store"), {"OPENAI_API_KEY": "k"}, "error: --graph mine=/nowhere/store: no store in"),
    (("--graph", "empty={tmp}"), {"OPENAI_API_KEY": "k"}, "error: no store in"),
    (("--graph", "a=live", "--graph", "a=live"), {"OPENAI_API_KEY": "k"}, "error: --graph a: named twice"),
    (("--dataset", "https://example.org/ds/=other"), {"OPENAI_API_KEY": "k"},
     "error: --dataset https://example.org/ds/=other: no graph named 'other' (served: wikidata)"),
    (("--workers", "0"), {"OPENAI_API_KEY": "k"}, "error: --workers must be at least 1"),
    (("--waiting-per-client", "-1"), {"OPENAI_API_KEY": "k"}, "error: --waiting-per-client must be at least 0"),
    (("--watch-grace", "-1"), {"OPENAI_API_KEY": "k"}, "error: --watch-grace must be at least 0"),
    (("--conversations", "{tmp}"), {"OPENAI_API_KEY": "k"}, "error: --conversations "),
    (("--trusted-proxy", "proxy.example"), {"OPENAI_API_KEY": "k"},
     "error: --trusted-proxy 'proxy.example' is not an address or a network"),
])
def test_a_bad_argument_says_what_is_wrong(arguments, environment, message, tmp_path):
    base = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "-m", "serve", *(a.format(tmp=tmp_path) for a in arguments)],
                          env={**base, **environment}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr


def test_without_the_serve_extra_the_command_says_how_to_install_it():
    """A plain install of the package leaves the service's web stack out; as if uvicorn were not installed."""
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['uvicorn'] = None; "
                           "from serve.__main__ import main; sys.exit(main([]))"],
                          env={**os.environ, "OPENAI_API_KEY": "k"}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: the service needs uvicorn, from the package's [serve] extra: pip install -e '.[serve]' (from a "
        "clone) or pip install 'spinach-bot[serve]'"]


def test_help_names_the_serve_extra_and_the_trusted_proxies():
    done = subprocess.run([sys.executable, "-m", "serve", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "[serve] extra" in text and "--trusted-proxy ADDRESS" in text and "X-Forwarded-For" in text


def test_an_endpoint_that_cannot_say_its_model_is_refused_at_start_with_what_to_set(llm_server):
    """Not a "could not be reached" on every chat answer: the operator names the model."""
    llm = llm_server([], lists_models=False)
    base = {key: value for key, value in os.environ.items() if not key.startswith(("OPENAI_", "SPINACH_MODEL"))}
    done = subprocess.run([sys.executable, "-m", "serve", "--port", "0"], env={**base, "OPENAI_BASE_URL": llm.base_url},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: no model was named, and the endpoint did not say which it serves")
    assert "name one with SPINACH_MODEL" in done.stderr
