"""``memdex serve``: one long-running process for an index.

It runs the watcher (``watch.service``, unless ``--read-only``), loads the search engine's
modules, model, tokenizer and vectors once (a warm-up search), and answers on a Unix socket
beside the index (``client.socket_path``): each request is a command line, run with the
caller's folder and environment (``caller``), its output sent back to be printed. With
HTTP on, the same process serves JSON and MCP (``http``). SIGTERM and SIGHUP stop it with
exit code 0, SIGINT with 130: requests in flight are answered, the watcher's batch is
committed, the socket is removed. What it is doing is in ``<db>.serve.json`` and answers
a ping (``memdex status``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import struct
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdex import __version__
from memdex.doors.serve.caller import Gate, as_caller, route_output, run_command
from memdex.doors.serve.client import PROTOCOL, ping, socket_path
from memdex.doors.serve.state import state_path
from memdex.errors import IndexNotFound, MemdexError
from memdex.query.engine import Engine
from memdex.utils import atomic_write, run_until_signalled, utc_stamp

if TYPE_CHECKING:
    from memdex.doors.serve.http import HttpServer
    from memdex.watch.service import WatchService

log = logging.getLogger("memdex.doors.serve")
MAX_REQUEST = 1 << 22
# Variables that shape what the server has loaded (the model it encodes with, the files the
# watcher ignores): a caller whose values differ is answered in-process instead.
PINNED_ENV = ("MEMDEX_EMBED_MODEL", "MEMDEX_IGNORE", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE")
WARM_QUERY = "memdex"


class Server:
    "The resident process of one index: socket, watcher, optional HTTP, warm engine."

    def __init__(
        self,
        db_path: Path,
        *,
        watcher: WatchService | None = None,
        http: HttpServer | None = None,
        command: str = "serve",  # what started it, for `memdex status`: serve, or watch
    ) -> None:
        self.db_path = db_path
        self.socket = Path(socket_path(str(db_path)))
        self.gate = Gate()
        # What the server keeps warm for every command, MCP call and HTTP search it answers:
        # the query encoder (onnxruntime's, built in the warm-up) and the vectors.
        self.engine = Engine(stays=True)
        self.watcher = watcher
        self.http = http
        self.exit_code = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener: _Listener | None = None
        self.state: dict[str, Any] = {
            "pid": os.getpid(),
            "command": f"memdex {command}",
            "version": __version__,
            "db": str(db_path),
            "socket": str(self.socket),
            "http": None,
            "token": bool(http and http.settings.token),
            "read_only": watcher is None,
            "started_at": utc_stamp(),
            "warm": None,
            "requests": {"cli": 0, "fallback": 0},
        }

    # -- lifecycle -------------------------------------------------------------------------
    def stop(self, exit_code: int = 0) -> None:
        "Ask the server to finish; run() returns once requests in flight are answered."
        self.exit_code = exit_code
        self._stop.set()
        if self.watcher is not None:
            self.watcher.stop(exit_code)

    def run(self) -> int:
        if self.watcher is None and not self.db_path.exists():
            raise IndexNotFound(
                f"No memdex index at {self.db_path} to serve read-only: restore or index it first."
            )
        answering = ping(str(self.db_path))
        if answering is not None:
            raise MemdexError(
                f"{answering.get('command') or 'memdex serve'} (pid {answering.get('pid')}) already serves "
                f"{self.db_path} on {self.socket}."
            )
        self._refuse_a_second_writer()
        if self.watcher is not None:
            self.watcher.open()  # the index and its lock first: their errors say what is wrong
        try:
            self._listener = self._bind()
        except BaseException:
            if self.watcher is not None:
                self.watcher.release()
            raise
        try:
            route_output()
            self._start("memdex-socket", self._listener.serve_forever)
            if self.http is not None:
                self.state["http"] = self.http.start(self.gate, self.engine)
                log.info("serving HTTP at %s (MCP at %s/mcp)", self.state["http"], self.state["http"])
            self._start("memdex-warm", self._warm)
            self._save()
            log.info("serving %s on %s", self.db_path, self.socket)
            if self.watcher is not None:
                self.exit_code = self.watcher.run() or self.exit_code
            else:
                self._stop.wait()
        finally:
            self._close()
            if self.watcher is not None:
                self.watcher.release()  # its index and lock, when it failed before it ran
        return self.exit_code

    def _refuse_a_second_writer(self) -> None:
        from memdex.store.lock import holder

        current = holder(self.db_path)
        if self.watcher is not None and current:
            who = "memdex watch" if current.get("role") == "watch" else "memdex index"
            raise MemdexError(
                f"{who} (pid {current.get('pid')}) is writing to {self.db_path}; memdex serve runs "
                "its own watcher: stop it first, or serve with --read-only."
            )

    def _bind(self) -> _Listener:
        self.socket.unlink(missing_ok=True)  # left by a server that was killed
        before = os.umask(0o177)  # the socket is this user's alone (also checked per request)
        try:
            listener = _Listener(str(self.socket), _Handler)
        except OSError as exc:
            raise MemdexError(f"Cannot listen on {self.socket}: {exc.strerror or exc}") from exc
        finally:
            os.umask(before)
        listener.app = self
        return listener

    def _start(self, name: str, target: Any) -> None:
        thread = threading.Thread(target=target, name=name)
        thread.start()
        self._threads.append(thread)

    def _close(self) -> None:
        if self._listener is not None:
            self._listener.shutdown()
            self._listener.server_close()  # waits for requests in flight
            try:
                if os.stat(self.socket).st_ino == self._listener.inode:
                    self.socket.unlink()
            except FileNotFoundError:
                pass
        if self.http is not None:
            self.http.stop()
        self.engine.close()
        for thread in self._threads:
            thread.join()
        self.state["stopped_at"] = utc_stamp()
        self._save()
        log.info("stopped serving")

    def _warm(self) -> None:
        """One search, so the first caller finds the modules imported and the model, tokenizer
        and vectors loaded. An index that cannot be searched yet is no reason to stop."""
        started = time.perf_counter()
        try:
            from memdex.doors.cli import searching  # noqa: F401 - the commands' modules, loaded
            from memdex.doors.dispatch import run
            from memdex.store import db

            with self.gate.shared():
                conn = db.connect(self.db_path, create=False, readonly=True, upgrade=True)
                try:
                    result = run(conn, WARM_QUERY, engine=self.engine).result
                    encoder = self.engine.warm(conn)  # onnxruntime's, built before any caller asks
                finally:
                    conn.close()
            meaning = result.semantic
        except MemdexError as exc:
            log.warning("warm-up search failed (%s); the first search loads what it needs", exc)
            self.state["warm"] = {"error": str(exc)}
            return
        seconds = round(time.perf_counter() - started, 3)
        self.state["warm"] = {"seconds": seconds, "meaning": meaning, "query_encoder": encoder}
        log.info("warm in %.2f s", seconds)

    def _save(self) -> None:
        try:
            atomic_write(state_path(self.db_path), json.dumps(self.status(), indent=1, default=str))
        except OSError as exc:
            log.warning("cannot write %s: %s", state_path(self.db_path), exc)

    def status(self) -> dict[str, Any]:
        out = dict(self.state)
        if self.http is not None:
            out["requests"] = {**self.state["requests"], "http": self.http.requests}
        return out

    # -- requests --------------------------------------------------------------------------
    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        "The reply to one request from the socket: a pong, the command's output, or a fallback."
        if request.get("protocol") != PROTOCOL:
            return self._fallback(f"protocol {request.get('protocol')!r}, this server speaks {PROTOCOL}")
        if request.get("ping"):
            return {"pong": self.status()}
        why = self._refusal(request)
        if why:
            return self._fallback(why)
        argv = [str(a) for a in request["argv"]]
        tty = tuple(bool(t) for t in request.get("tty", (False, False)))[:2]
        stdin = str(request.get("stdin") or "")
        with as_caller(self.gate, request["cwd"], dict(request["env"]), (tty[0], tty[1]), stdin) as out:
            code = run_command(argv, self.engine)
        self.state["requests"]["cli"] += 1
        return {"exit": code, "out": out}

    def _refusal(self, request: dict[str, Any]) -> str | None:
        "Why this request is better run in-process by its caller, or None."
        if request.get("version") != __version__:
            return f"the server is memdex {__version__}, the caller {request.get('version')}"
        if request.get("db") != str(self.db_path):
            return f"the server serves {self.db_path}"
        env = request.get("env")
        if not isinstance(env, dict) or not isinstance(request.get("argv"), list):
            return "not a request"
        for name in PINNED_ENV:
            if env.get(name) != os.environ.get(name):
                return f"${name} differs from the server's"
        if not os.path.isdir(str(request.get("cwd"))):
            return "the caller's folder cannot be entered here"
        return None

    def _fallback(self, why: str) -> dict[str, Any]:
        self.state["requests"]["fallback"] += 1
        log.info("answered in-process by the caller: %s", why)
        return {"fallback": why}


class _Listener(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = False
    block_on_close = True  # server_close() waits for the requests in flight
    app: Server
    inode: int = 0

    def server_bind(self) -> None:
        super().server_bind()
        self.inode = os.stat(self.server_address).st_ino  # type: ignore[arg-type]


class _Handler(socketserver.StreamRequestHandler):
    server: _Listener

    def handle(self) -> None:
        if not _same_user(self.request):
            return  # closed unanswered: the caller runs in-process
        line = self.rfile.readline(MAX_REQUEST)
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError:
            reply = {"fallback": "unreadable request"}
        else:
            reply = self.server.app.answer(request)
        try:
            self.wfile.write(json.dumps(reply).encode())  # ASCII: lone surrogates survive as escapes
        except OSError:
            pass  # the caller went away (Ctrl-C); nothing to tell it


def _same_user(sock: socket.socket) -> bool:
    "Is the process at the other end this server's user? (Linux tells; elsewhere the mode 0600 does.)"
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid == os.getuid()


def run(server: Server) -> int:
    """Run until SIGTERM/SIGHUP (exit 0) or SIGINT (exit 130), from the main thread; the
    handlers there before are put back when it returns."""
    return run_until_signalled(server.run, server.stop)
