"""A stand-in HTTP server on 127.0.0.1, served from a thread, that stops at once.

``socketserver``'s ``serve_forever`` looks for a shutdown request every
*poll_interval* seconds (0.5 by default), and ``shutdown()`` waits for that
look: half a second per server closed, paid by every test that starts one.
Every stand-in (the model, Wikidata, the SPARQL endpoint, the fault proxies)
is served here with a short interval instead.
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: How often the serving thread looks for a shutdown request.
POLL_SECONDS = 0.02


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that hung up (a reset, a broken pipe) is no error of the server's, and its traceback would
        land in the stderr of the test process, which tests read as the program's; anything else is printed."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class LoopbackServer:
    """A threading HTTP server for *handler* on 127.0.0.1 (*port*, or any free one)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        for _ in range(50):  # a port just closed may still be held for a moment
            try:
                self._httpd = _Server(("127.0.0.1", port), handler)
                break
            except OSError:
                if not port:
                    raise
                time.sleep(0.1)
        else:
            raise RuntimeError(f"cannot listen on 127.0.0.1:{port} again")
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS},
                         daemon=True).start()

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
