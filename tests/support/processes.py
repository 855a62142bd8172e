"""Stopping a helper process the tests started, and waiting for what a test made happen."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any


def stop(process: subprocess.Popen, timeout: float = 20) -> None:
    """Ask *process* to end (SIGTERM), and kill it if it has not within *timeout* seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


#: How long a test waits for what it made happen (a reply, a pass, a log line): only a bot that died (``alive``)
#: ends the wait sooner, so this is for a hung bot, never a timing: a machine with other work running took
#: minutes for a pass that takes seconds on a quiet one.
PATIENCE = 600.0


def wait_for(predicate: Callable[[], Any], seconds: float, what: str,
             alive: Callable[[], str | None] = lambda: None) -> Any:
    """Poll *predicate* until it is true (returned); fail saying *what* was awaited after *seconds*.

    *alive* returns why waiting is pointless (the process died), or ``None``.  The pause between looks
    doubles from 50 ms to a quarter of a second: a predicate that asks the wiki (a page's text) would
    otherwise keep its server busy for as long as the bot takes, slowing everything else it serves.
    """
    deadline = time.monotonic() + seconds
    pause = 0.05
    while True:
        value = predicate()
        if value:
            return value
        dead = alive()
        assert dead is None, f"{dead} while waiting for {what}"
        assert time.monotonic() < deadline, f"timed out after {seconds:.0f} s waiting for {what}"
        time.sleep(pause)
        pause = min(2 * pause, 0.25)
