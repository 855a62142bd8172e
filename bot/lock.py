"""One live bot process at a time per state file, held by a lock file next to the state.

Two live processes on one page (the watcher and a ``--section X --live``)
race each other's saves, and MediaWiki does not report an edit conflict
between two edits of the same user: one reply silently replaces the other.
The lock is an ``flock`` on ``<state>.lock``: the kernel releases it when the
process dies, however it dies, so a crash never leaves a stale lock.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)


class LockBusy(RuntimeError):
    """Another live bot process holds the lock."""


@dataclass
class ProcessLock:
    path: Path
    handle: IO[str]

    @classmethod
    def acquire(cls, state_path: Path, wait_seconds: float = 0.0) -> ProcessLock:
        """Take the lock next to *state_path*, waiting up to *wait_seconds* (saying so once); :class:`LockBusy`
        otherwise."""
        path = state_path.with_name(state_path.name + ".lock")
        handle = path.open("a+")
        deadline = time.monotonic() + wait_seconds
        waiting = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "unknown"
                if not waiting and wait_seconds > 0:
                    log.info("another live bot process (pid %s) is using %s: waiting up to %g s for it",
                             holder, state_path, wait_seconds)
                    waiting = True
                if time.monotonic() >= deadline:
                    handle.close()
                    raise LockBusy(f"another live bot process (pid {holder}) is using {state_path}; wait for it "
                                   f"to finish or stop it (--wait-for-lock SECONDS waits)") from None
                time.sleep(0.5)
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        return cls(path, handle)

    def release(self) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
