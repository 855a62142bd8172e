"""The bot's name for :mod:`agent.redact` (secrets) and the log's formatter (:mod:`agent.logs`), which the bot and
the service share."""

from agent.logs import LogFormatter as RedactingFormatter
from agent.logs import install
from agent.redact import MASK, SECRET_URLS, Scrubbed, redact, remember, remember_environment, remember_url, scrub

__all__ = ["MASK", "SECRET_URLS", "RedactingFormatter", "Scrubbed", "install", "redact", "remember",
           "remember_environment", "remember_url", "scrub"]
