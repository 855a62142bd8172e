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
])
def test_a_bad_argument_says_what_is_wrong(arguments, environment, message, tmp_path):
    base = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    done = subprocess.run([sys.executable, "-m", "serve", *(a.format(tmp=tmp_path) for a in arguments)],
                          env={**base, **environment}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(message), done.stderr
    assert "Traceback" not in done.stderr
