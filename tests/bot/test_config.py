"""The bot's settings file: every key documented, the model's timeout among them, an unknown key refused."""

import pytest

from agent.kb.local import LocalKB
from bot import config as config_module
from bot.config import BotConfig
from bot.forum import Request
from bot.run import make_answerer, model_settings
from tests.support.llm_server import SlowReply, ToolCallReply


def test_every_setting_is_documented_in_the_module():
    for name in BotConfig.__dataclass_fields__:
        assert f"\n{name} " in config_module.__doc__, name


def test_the_model_timeout_comes_from_bot_ini_and_reaches_the_model(tmp_path, llm_server):
    slow = llm_server(lambda body: SlowReply(5, ToolCallReply("stop", {"explanation": "", "language": "en"})))
    (tmp_path / "bot.ini").write_text(f"[bot]\nbase_url = {slow.base_url}\nmodel = m\nllm_timeout = 0.5\n"
                                      f"kb_dir = {tmp_path / 'store'}\n")
    LocalKB(tmp_path / "store").close()  # a dry run opens the store read-only: it must exist
    config = BotConfig.from_file(tmp_path / "bot.ini")
    assert config.llm_timeout == 0.5 and BotConfig().llm_timeout == 60.0
    result = make_answerer(config, model_settings(config))(Request(heading="Q", question="Who?"))
    assert result.stop_reason == "llm_error" and "no reply within 0.5 s" in result.stop_message


def test_a_questions_run_ends_when_its_minutes_from_bot_ini_are_spent(tmp_path, llm_server):
    """A model that answers every call, slowly, with another query: the run ends on its budget, with no call
    after it, not after its thirty actions."""
    looping = llm_server(lambda body: SlowReply(0.5, ToolCallReply("execute_sparql", {
        "thought": "Once more.", "sparql": "SELECT ?x WHERE { VALUES ?x { 1 } }"})))
    (tmp_path / "bot.ini").write_text(f"[bot]\nbase_url = {looping.base_url}\nmodel = m\nrun_minutes = 0.02\n"
                                      f"kb_dir = {tmp_path / 'store'}\n")
    LocalKB(tmp_path / "store").close()
    config = BotConfig.from_file(tmp_path / "bot.ini")
    assert config.run_minutes == 0.02 and BotConfig().run_minutes == 15.0
    result = make_answerer(config, model_settings(config))(Request(heading="Q", question="Who?"))
    assert result.stop_reason == "time_limit" and "1.2 s are spent" in result.stop_message, result.stop_message
    assert len(looping.requests) < 6


def test_an_unknown_setting_is_an_error_naming_it(tmp_path):
    (tmp_path / "bot.ini").write_text("[bot]\nllm_timeout_seconds = 5\n")
    with pytest.raises(ValueError, match="unknown settings in \\[bot\\]: llm_timeout_seconds"):
        BotConfig.from_file(tmp_path / "bot.ini")


def test_without_a_model_named_the_bot_asks_the_endpoint_once_and_says_how_to_name_one(tmp_path, llm_server,
                                                                                      caplog, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SPINACH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    LocalKB(tmp_path / "store").close()
    served = llm_server([ToolCallReply("stop", {"explanation": "", "language": "en"})], model="local/SmolLM2")
    config = BotConfig(base_url=served.base_url, kb_dir=str(tmp_path / "store"))
    llm_config = model_settings(config)
    make_answerer(config, llm_config)
    assert llm_config.model == "local/SmolLM2"  # what the log line names
    gone = BotConfig(base_url="http://127.0.0.1:9/v1", kb_dir=str(tmp_path / "store"), llm_timeout=2)
    llm_config = model_settings(gone)
    llm_config.max_retries = 0
    answer = make_answerer(gone, llm_config)
    advice = "name one with model in bot.ini or SPINACH_MODEL"
    assert llm_config.model is None and advice in caplog.text and "--model" not in caplog.text
    result = answer(Request(heading="Q", question="Who?"))
    assert result.stop_reason == "llm_error" and advice in result.stop_message
