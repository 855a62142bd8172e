"""An operator's first hour, without a wiki: what the commands print when something is missing, and the
example settings to copy."""

from __future__ import annotations

import configparser
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import BotConfig

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ("spinach-bot", "spinach-agent", "spinach-eval", "spinach-kb", "spinach-examples")


def test_an_unreachable_wiki_is_one_line_and_exit_2(tmp_path):
    shutil.copy(ROOT / "user-config.py", tmp_path / "user-config.py")
    env = {**os.environ, "PYWIKIBOT_DIR": str(tmp_path), "OPENAI_API_KEY": "sk-operator",
           "SPINACH_BOT_API_URL": "https://wiki.example.invalid/w/api.php", "SPINACH_BOT_USER": "MyQueryBot"}
    done = subprocess.run([sys.executable, "-m", "bot.run", "--once"], env=env, capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot reach the wiki: "), done.stderr[-3000:]
    assert "wiki.example.invalid" in lines[0] and "sk-operator" not in done.stderr


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_console_script_names_itself_and_the_sparql_dialect(script):
    path = Path(sys.executable).parent / script
    if not path.exists():
        pytest.skip(f"{script} is not installed beside {sys.executable} (pip install -e .)")
    shown = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120).stdout
    assert shown.startswith(f"usage: {script} ") and "WIKIDATA_SPARQL_DIALECT" in shown
    if script == "spinach-eval":
        assert "--api-key-file" in shown
    if script == "spinach-examples":  # the knowledge base that names properties, the wiki as the bot reads it
        assert "\nenvironment:\n  WIKIDATA_API_URL  " in shown and "  SPINACH_BOT_API_URL  " in shown
        assert "OPENAI_API_KEY" not in shown


@pytest.mark.parametrize("script", ("spinach-report", "spinach-replay", "spinach-examples"))
def test_the_research_console_scripts_name_themselves(script):
    path = Path(sys.executable).parent / script
    if not path.exists():
        pytest.skip(f"{script} is not installed beside {sys.executable} (pip install -e .)")
    shown = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120).stdout
    assert shown.startswith(f"usage: {script} ")


def test_run_as_a_module_the_usage_says_how():
    shown = subprocess.run([sys.executable, "-m", "bot.run", "--help"], capture_output=True, text=True,
                           timeout=120).stdout
    assert shown.startswith("usage: python -m bot.run ") and "WIKIDATA_SPARQL_DIALECT" in shown


def test_spinach_eval_reads_the_key_from_a_file_and_says_when_it_cannot(tmp_path):
    from scripts import evaluate

    missing = tmp_path / "no-such-key"
    code = evaluate.main(["--dataset", "qald10", "--data", str(tmp_path), "--out", str(tmp_path / "out"),
                          "--api-key-file", str(missing)])
    assert code == 2


def test_the_example_bot_ini_lists_every_setting_with_its_default(tmp_path):
    example = ROOT / "bot.ini.example"
    parser = configparser.ConfigParser()
    parser.read(example)
    assert set(parser["bot"]) == {field.name for field in dataclasses.fields(BotConfig)}
    assert BotConfig.from_file(example) == BotConfig()
    assert "bot.ini.example" in (ROOT / "README.md").read_text()
    (tmp_path / "bot.ini").write_text("[bot]\nreview = true\n")
    with pytest.raises(ValueError, match="review = true needs reviewers"):
        BotConfig.from_file(tmp_path / "bot.ini")
