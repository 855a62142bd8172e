"""Stopping a helper process the tests started."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen, timeout: float = 20) -> None:
    """Ask *process* to end (SIGTERM), and kill it if it has not within *timeout* seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
