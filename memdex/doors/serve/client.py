"""The thin client: ``memdex search|ask|show|context`` ask a running ``memdex serve`` first.

This module runs before click, sqlite3 or numpy are imported. It finds the socket beside the
index, sends the command line with the caller's folder and environment, and prints what
comes back, stream by stream in the order it was written. When no server answers, or the
server is another version, serves another index or cannot take this caller's environment,
:func:`forward` returns None and the command runs in-process as it always has.
"""

from __future__ import annotations

import _socket  # socket's C core: the socket module's enums cost milliseconds at each start
import json
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 1
SERVED = ("search", "ask", "show", "context")  # context: the agents' session-start hook
READS_STDIN = ("context",)  # a hook's JSON arrives on stdin: sent with the request
NO_SERVER_ENV = "MEMDEX_NO_SERVER"  # set (not 0): every command runs in-process
MAX_SOCKET_PATH = 100  # a socket's path must fit sun_path: 108 bytes on Linux, 104 on macOS
CONNECT_SECONDS = 1.0

# The environment a caller sends: what the served commands read -- memdex's own settings,
# Claude's (and the proxies and certificates its HTTP client reads), the clock of relative
# dates, where the default index lives. Names matched whole, or by prefix.
ENV_PREFIXES = ("MEMDEX_", "ANTHROPIC_")
ENV_NAMES = (
    "HOME",
    "TZ",
    "XDG_DATA_HOME",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
)


def relevant(name: str) -> bool:
    "Is this environment variable one a served command reads?"
    return name in ENV_NAMES or name.startswith(ENV_PREFIXES)


def index_path(db: str | None) -> str:
    """The index a command means: ``--db``, else $MEMDEX_DB, else the default, resolved as
    ``store.db.resolve_db_path`` resolves it (a test holds the two to the same answers)."""
    if not db:
        db = os.environ.get("MEMDEX_DB")
    if not db:
        data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(
            os.path.expanduser("~"), ".local", "share"
        )
        db = os.path.join(os.path.expanduser(data_home), "memdex", "memdex.db")
    return os.path.realpath(os.path.expanduser(db))


def socket_path(db_path: str) -> str:
    """Where the server of ``db_path`` listens: ``<db>.sock`` beside the index, or, when that
    path is too long for a socket, a name made from it in $XDG_RUNTIME_DIR (else /tmp)."""
    path = f"{db_path}.sock"
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    import hashlib

    digest = hashlib.sha1(os.fsencode(db_path)).hexdigest()[:16]
    folder = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(folder, f"memdex-{os.getuid()}-{digest}.sock")


def command_of(argv: list[str]) -> tuple[str | None, str | None, list[str]]:
    "(command, --db, the command's own arguments) of a command line; no command: (None, ...)."
    db = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--db" and i + 1 < len(argv):
            db, i = argv[i + 1], i + 2
        elif arg.startswith("--db="):
            db, i = arg[len("--db=") :], i + 1
        elif arg.startswith("-"):
            return None, db, []  # --help, --version, or a mistake: the CLI's own to answer
        else:
            return arg, db, argv[i + 1 :]
    return None, db, []


def exchange(path: str, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any] | None:
    "Send one request to the socket at ``path``; its reply, or None when nobody answers."
    try:
        if os.stat(path).st_uid != os.getuid():
            return None  # a socket another user made is not this user's server
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_SECONDS)
        sock.connect(path)
        sock.settimeout(timeout)
        sock.sendall(json.dumps(request).encode() + b"\n")
        chunks = []
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        return None  # no server, or it went away before it answered: nothing was printed yet
    finally:
        sock.close()
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError:
        return None
    return reply if isinstance(reply, dict) else None


def request_for(argv: list[str], db_path: str) -> dict[str, Any]:
    "What a command line asks the server: itself, and the caller's folder, environment and terminals."
    from memdex import __version__

    return {
        "protocol": PROTOCOL,
        "version": __version__,
        "db": db_path,
        "argv": argv,
        "cwd": os.getcwd(),
        "env": {k: v for k, v in os.environ.items() if relevant(k)},
        "tty": [sys.stdout.isatty(), sys.stderr.isatty()],
        "stdin": _stdin(argv),
    }


def _stdin(argv: list[str]) -> str:
    "What the command would read on stdin: all of it, for the commands that read it from a pipe."
    command = command_of(argv)[0]
    if command not in READS_STDIN or sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.read()


def forward(argv: list[str]) -> int | None:
    """Run ``memdex ARGV`` on the index's server: its exit code once its output is printed, or
    None when this command line is to run in-process (not served, or nobody answered)."""
    if os.environ.get(NO_SERVER_ENV, "") not in ("", "0"):
        return None
    command, db, rest = command_of(argv)
    if command not in SERVED:
        return None
    if any(a == "--batch" or a.startswith("--batch=") for a in rest):
        return None  # batch lines come from this process's stdin or files
    db_path = index_path(db)
    try:
        request = request_for(argv, db_path)
    except OSError:
        return None  # the caller's folder is gone: the CLI says so in-process
    try:
        reply = exchange(socket_path(db_path), request)
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # what click prints for Ctrl-C
        return 1
    if reply is None or "exit" not in reply:
        if request["stdin"]:  # read for the server: put back for the command run in-process
            import io

            sys.stdin = io.StringIO(request["stdin"])
        return None
    for stream, text in reply.get("out", []):
        out = sys.stdout if stream == 1 else sys.stderr
        out.write(text)
        out.flush()
    return int(reply["exit"])


def ping(db_path: str, timeout: float = 0.5) -> dict[str, Any] | None:
    "The state of the server of this index, or None when none answers."
    reply = exchange(socket_path(db_path), {"protocol": PROTOCOL, "ping": True}, timeout)
    pong = reply.get("pong") if reply else None
    return pong if isinstance(pong, dict) else None
