"""Who may use memdex serve over HTTP: anyone on loopback, else only bearers of the token.

The token is read once from ``--token-file``; a request must send ``Authorization: Bearer
<token>``, compared in constant time. A request without it, or with another, gets 401 and
an empty body: nothing about the index, the server or why.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import stat
from pathlib import Path

from memdex.errors import InvalidParameter

log = logging.getLogger("memdex.doors.serve")
MIN_TOKEN_CHARS = 16
MAKE_ONE = "python -c 'import secrets; print(secrets.token_urlsafe(32))' > FILE"


def is_loopback(host: str) -> bool:
    "Does an address to listen on reach this machine only? (127.0.0.0/8, ::1, localhost)"
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def read_token(path: Path) -> str:
    "The token in ``path`` (surrounding whitespace dropped); InvalidParameter if it is no good."
    try:
        token = path.read_text(encoding="utf-8").strip()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParameter(f"--token-file {path} cannot be read ({exc}).") from exc
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise InvalidParameter(
            f"--token-file {path} must hold one token of {MIN_TOKEN_CHARS} or more characters and no "
            f"spaces; make one with: {MAKE_ONE}"
        )
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("--token-file %s can be read by other users of this machine: chmod 600 it", path)
    return token


def authorized(header: bytes | None, token: str) -> bool:
    "Does this Authorization header carry the token? (Constant-time: timing says nothing.)"
    if not header:
        return False
    scheme, _, value = header.strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return False
    return hmac.compare_digest(value.strip(), token.encode("utf-8"))


def check_bind(host: str, token: str | None) -> None:
    "Refuse to serve beyond this machine without a token."
    if token is None and not is_loopback(host):
        raise InvalidParameter(
            f"--host {host} would serve your memories beyond this machine to anyone who asks: give "
            f"--token-file FILE (clients send 'Authorization: Bearer <token>'; make one with {MAKE_ONE}), "
            "or keep the default 127.0.0.1."
        )
