"""An operator's first hour, without a wiki: what the commands print when something is missing, and the
example settings to copy."""

from __future__ import annotations

import configparser
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import BotConfig
from tests.support.bot_rig import PATIENCE, BotRig, LogReader, scripted, wait_for
from tests.support.euler import euler_entities
from tests.support.forum_text import new_section
from tests.support.llm_server import SlowReply
from tests.support.paths import ROOT
from tests.support.wikidata_server import select

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


@pytest.mark.mediawiki
def test_the_watchers_log_names_the_endpoints_model_and_holds_no_scheduler_chatter(mediawiki, llm_server,
                                                                                   wikidata_server, tmp_path,
                                                                                   request):
    wikidata = wikidata_server(sparql=lambda query: select(["advisor"], [{"advisor": "Q124500"}]))
    wikidata.add(*euler_entities())
    answer = scripted({})
    # A pass slower than the interval: the scheduler skips the runs that fall due meanwhile.
    llm = llm_server(lambda body: SlowReply(2, answer(body)), model="local/SmolLM2-135M")
    rig = BotRig(mediawiki, tmp_path, llm, wikidata)
    forum = mediawiki.fresh_forum(request.node.name)
    rig.run(forum, "--once", "--live")  # the first look: backlog
    mediawiki.edit_as_human(forum, mediawiki.page_text(forum) + new_section("Euler", "Who advised Euler?"))
    (tmp_path / "bot.ini").write_text("[bot]\ninterval_minutes = 0.01\n")
    watcher = rig.start(forum, "--live", "--config", str(tmp_path / "bot.ini"))
    log = LogReader(watcher)
    wait_for(lambda: rig.bot_edits(forum), PATIENCE, "the reply", log.death)
    passes = log.count("unchanged")
    wait_for(lambda: log.count("unchanged") >= passes + 2, PATIENCE, "two more passes", log.death)
    watcher.send_signal(signal.SIGTERM)
    watcher.wait(timeout=60)
    stderr = log.close()
    assert f"(live; model local/SmolLM2-135M at {llm.base_url})" in stderr, stderr[:2000]
    assert "apscheduler" not in stderr and "maximum number of running instances" not in stderr, stderr[-3000:]
    assert [line for line in stderr.splitlines() if " INFO bot" not in line and " WARNING bot" not in line] == [], \
        stderr[-3000:]
