"""``pygmentize`` for the test wiki's SyntaxHighlight: Debian's Pygments, loaded once.

SyntaxHighlight starts ``$wgPygmentizePath`` for every ``{{SPARQL}}`` block
it has not highlighted before, and a fresh ``pygmentize`` spends about a
tenth of a second of CPU starting Python, importing Pygments and compiling
the SPARQL lexer: over the suite's eight hundred blocks (the gold queries
alone are seven hundred), more than a minute.  Here a server process keeps
Pygments loaded, and the ``pygmentize`` MediaWiki starts (:data:`CLIENT`,
Python without ``site``) hands it the command line and prints what
``pygments.cmdline.main`` printed, exit code included.  The highlighting,
its options and its output are Pygments' own; when the server cannot be
reached, the client runs Pygments itself.

This file runs as a script under Debian's ``/usr/bin/python3`` (the Python
whose Pygments the wiki uses): the standard library and Pygments only.
"""

import io
import os
import socket
import subprocess
import sys
import traceback
from pathlib import Path

#: The script MediaWiki runs as ``pygmentize``; ``{socket!r}`` is the server's socket.
CLIENT = '''#!/usr/bin/python3 -SI
import os
import socket
import sys

connection = socket.socket(socket.AF_UNIX)
try:
    connection.connect({socket!r})
except OSError:  # no server: Pygments in this process, as Debian's pygmentize runs it
    os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c",
                                  "import sys; from pygments.cmdline import main; sys.exit(main(sys.argv))",
                                  *sys.argv[1:]])
connection.sendall(b"\\0".join(os.fsencode(part) for part in [os.getcwd(), *sys.argv[1:]]))
connection.shutdown(socket.SHUT_WR)
answer = bytearray()
while chunk := connection.recv(1 << 16):
    answer += chunk
head, _, streams = bytes(answer).partition(b"\\n")
code, size = map(int, head.split())
sys.stdout.buffer.write(streams[:size])
sys.stdout.flush()
sys.stderr.buffer.write(streams[size:])
sys.exit(code)
'''


def start(path: Path, log: Path) -> subprocess.Popen:
    """The server, on the Unix socket *path*, writing what goes wrong to *log*."""
    with log.open("w") as errors:
        return subprocess.Popen(["/usr/bin/python3", __file__, str(path)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=errors)


def run(argv: list[str]) -> tuple[int, bytes, bytes]:
    """``pygmentize *argv*`` in this process: its exit code, what it wrote to stdout and to stderr."""
    from pygments.cmdline import main

    streams = {name: io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for name in ("stdout", "stderr")}
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # SyntaxHighlight gives a file, never stdin
    sys.stdout, sys.stderr = streams["stdout"], streams["stderr"]
    try:
        code = main(["pygmentize", *argv])
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    except Exception:
        traceback.print_exc()
        code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    for stream in streams.values():
        stream.flush()
    return code or 0, streams["stdout"].buffer.getvalue(), streams["stderr"].buffer.getvalue()


def serve(path: str) -> None:
    """Answer clients on the Unix socket *path*, one at a time (each runs in the client's directory)."""
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    while True:
        connection, _ = listener.accept()
        with connection:
            request = bytearray()
            while chunk := connection.recv(1 << 16):
                request += chunk
            try:
                directory, *argv = [os.fsdecode(part) for part in bytes(request).split(b"\0")]
                os.chdir(directory)
                code, out, err = run(argv)
            except Exception:  # e.g. the client's directory is gone: it fails, the server goes on
                code, out, err = 1, b"", traceback.format_exc().encode()
            try:
                connection.sendall(f"{code} {len(out)}\n".encode() + out + err)
            except OSError:
                pass


if __name__ == "__main__":
    serve(sys.argv[1])
