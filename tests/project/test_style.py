"""The tree keeps the style ``setup.cfg`` declares: flake8, with its settings there, finds nothing."""

import subprocess
import sys

from tests.support.paths import ROOT


def test_flake8_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "flake8", "agent", "bot", "harness", "scripts", "prompts", "tests",
                           "user-config.py"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
