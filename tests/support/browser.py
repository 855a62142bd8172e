"""Headless Chromium for the tests that judge a page as a reader sees it, driven over the DevTools protocol.

The session fixture installs Debian's ``chromium`` when it is missing (the
tests run as root on Debian; elsewhere these tests are skipped, saying why,
unless the environment variable ``CI`` is set, where that is a failure), and
starts it headless with a new empty profile and nothing that reaches the
network by itself.  The tests talk to it over its DevTools websocket
(``websocket-client``, from the test extra): open a page, wait until a
script says it is ready, evaluate JavaScript and read back JSON.  Nothing is
downloaded at run time.
"""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.processes import stop as stop_process

CHROMIUM = "chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1200,900")


def _unavailable(reason: str) -> None:
    """Skip the browser tests, saying why; in CI (``CI`` set) a missing browser is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"headless Chromium is required in CI: {reason}")
    pytest.skip(f"no headless Chromium for these tests: {reason}")


def _install() -> str:
    """The browser's path, installing Debian's package once (test processes side by side take turns)."""
    with open(Path(tempfile.gettempdir()) / "spinach-chromium-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = shutil.which(CHROMIUM)
        if found:
            return found
        if not Path("/etc/debian_version").exists() or not shutil.which("apt-get"):
            _unavailable("Chromium is not installed and this is not Debian (the fixture installs Debian's package)")
        if os.geteuid() != 0:
            _unavailable("Chromium is not installed and installing Debian's package needs root")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]):
            done = subprocess.run(command, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                                  timeout=1200)
            if done.returncode != 0:
                _unavailable(f"cannot install Chromium ({' '.join(command)}): {done.stderr[-2000:]}")
        return shutil.which(CHROMIUM) or _unavailable("the chromium package installed no chromium command")


@dataclass
class Browser:
    """One headless Chromium and one tab of it."""

    process: subprocess.Popen
    profile: Path
    socket: Any = field(default=None, repr=False)
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1), repr=False)

    @classmethod
    def start(cls, path: str) -> Browser:
        import websocket

        profile = Path(tempfile.mkdtemp(prefix="spinach-chromium-"))
        process = subprocess.Popen([path, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                _unavailable(f"Chromium did not start (exit {process.returncode})")
            time.sleep(0.05)
        port = port_file.read_text().split("\n")[0].strip()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as response:
            tab = next(target for target in json.load(response) if target["type"] == "page")
        browser = cls(process, profile)
        browser.socket = websocket.create_connection(tab["webSocketDebuggerUrl"], timeout=60,
                                                     suppress_origin=True)
        return browser

    def call(self, method: str, **params: Any) -> dict:
        """One DevTools command and its result (events in between are skipped)."""
        number = next(self._ids)
        self.socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, script: str) -> Any:
        """The JSON value of *script* (an expression) in the page."""
        result = self.call("Runtime.evaluate", expression=script, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def width(self, pixels: int, height: int = 900) -> None:
        """Lay pages out *pixels* wide, as a reader's window of that width shows them."""
        self.call("Emulation.setDeviceMetricsOverride", width=pixels, height=height, deviceScaleFactor=1,
                  mobile=False)

    def open(self, url: str, ready: str, seconds: float = 60) -> None:
        """Load *url* and wait until the expression *ready* is true."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + seconds
        while not self.evaluate(f"document.readyState === 'complete' && !!({ready})"):
            assert time.monotonic() < deadline, f"{url} was not ready ({ready}) after {seconds:.0f} s"
            time.sleep(0.1)

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()
        stop_process(self.process)
        shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="session")
def browser() -> Browser:
    started = Browser.start(_install())
    yield started
    started.close()


@pytest.fixture
def another_browser() -> Browser:
    """A second headless Chromium of its own (its own profile and connections), for two readers at once."""
    started = Browser.start(_install())
    yield started
    started.close()
