"""Claude through the ``anthropic`` package: one structured call, failures as reasons.

memdex asks Claude for one thing at a time (an answer, or the next round's search terms) and
forces the reply through a single tool whose input is the structured result, so the reply
is data memdex validates, never an action: no other tool exists for a source's text to
invoke. Every failure -- no key, 401, 429, 5xx, overloaded, timeout, no network, a reply of
the wrong shape -- becomes :class:`Unavailable` with a reason a person can act on, and the
caller falls back to an answer built without the model.

Settings: the key from ``ANTHROPIC_API_KEY``, the endpoint from ``ANTHROPIC_BASE_URL`` (a
proxy, a gateway, a local server), the model from ``--model`` or ``MEMDEX_MODEL``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MODEL = "claude-haiku-5-5"  # fast and cheap: answers are short and grounded in sources
MODEL_ENV = "MEMDEX_MODEL"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_TIMEOUT = 60.0
MAX_RETRIES = 2  # for 429, 5xx and overloaded replies
MAX_WAIT = 10.0  # the longest retry-after memdex waits for; longer, it answers without the model


class Unavailable(Exception):
    "Claude could not give a usable reply; the message says why (never the key)."


@dataclass
class Settings:
    model: str = DEFAULT_MODEL
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    max_retries: int = MAX_RETRIES
    max_wait: float = MAX_WAIT

    @classmethod
    def from_env(cls, model: str | None = None, timeout: float | None = None) -> Settings:
        return cls(
            model=model or os.environ.get(MODEL_ENV) or DEFAULT_MODEL,
            api_key=os.environ.get(KEY_ENV) or None,
            base_url=os.environ.get(BASE_URL_ENV) or None,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        )


@dataclass
class Reply:
    data: dict[str, Any]
    model: str
    input_tokens: int
    output_tokens: int


class Claude:
    """A client for structured calls; construct it only when a key is set.

    Once a call fails for a reason that will not go away within this run (the key refused,
    no network, the API down after retries, a timeout), later calls fail at once with the
    same reason instead of paying for it again. A reply of the wrong shape does not count.
    """

    def __init__(self, settings: Settings) -> None:
        if not settings.api_key:
            raise Unavailable(f"no API key: set {KEY_ENV} to answer with Claude")
        import anthropic

        self.settings = settings
        self.failed: str | None = None
        self._anthropic = anthropic
        # memdex retries itself, so that a long retry-after cannot stall a search for minutes.
        self.client = anthropic.Anthropic(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout,
            max_retries=0,
        )

    def call(self, system: str, prompt: str, tool: dict[str, Any], max_tokens: int = 2048) -> Reply:
        "Send one user message; return the input Claude gave the tool."
        if self.failed:
            raise Unavailable(self.failed)
        try:
            message = self._create(system, prompt, tool, max_tokens)
        except Unavailable as exc:
            # An endpoint may echo the key in its error text (a proxy's "bad key sk-..."); the
            # reason is shown, saved in results files and sent over MCP, so the key leaves it,
            # and so does the chained exception that still holds it.
            self.failed = redact(str(exc), self.settings.api_key)
            raise Unavailable(self.failed) from None
        for block in message.content:
            if block.type == "tool_use" and block.name == tool["name"] and isinstance(block.input, dict):
                usage = message.usage
                return Reply(dict(block.input), message.model, usage.input_tokens, usage.output_tokens)
        raise Unavailable(f"the reply held no {tool['name']!r} result (stop reason {message.stop_reason})")

    def _create(self, system: str, prompt: str, tool: dict[str, Any], max_tokens: int) -> Any:
        errors = self._anthropic
        request: dict[str, Any] = {
            "model": self.settings.model,
            "max_tokens": max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": prompt}],
            "tools": [tool],
            "tool_choice": {"type": "tool", "name": tool["name"]},
        }
        attempt = 0
        while True:  # returns the message, or raises Unavailable
            try:
                return self.client.messages.create(**request)
            except errors.AuthenticationError as exc:
                raise Unavailable(f"the API refused the key (401): check {KEY_ENV}") from exc
            except errors.PermissionDeniedError as exc:
                raise Unavailable(f"the key may not use model {self.settings.model} (403)") from exc
            except errors.NotFoundError as exc:
                where = f"model {self.settings.model!r} or the endpoint"
                raise Unavailable(f"{where} was not found (404)") from exc
            except errors.APIStatusError as exc:
                wait = self._retry_wait(exc, attempt)
                if wait is None:
                    raise Unavailable(_status_reason(exc)) from exc
                time.sleep(wait)
                attempt += 1
            except errors.APITimeoutError as exc:
                raise Unavailable(f"no reply within {self.settings.timeout:g} s") from exc
            except errors.APIConnectionError as exc:
                cause = f"{type(exc.__cause__).__name__}: {exc.__cause__}" if exc.__cause__ else ""
                if "header" in cause.lower():
                    raise Unavailable(
                        f"the request could not be sent: a header is malformed (check {KEY_ENV})"
                    ) from exc
                raise Unavailable(f"cannot reach {public_url(self.settings.base_url)} (offline?)") from exc

    def _retry_wait(self, exc: Any, attempt: int) -> float | None:
        "Seconds to wait before retrying a 429, 5xx or overloaded reply; None: do not retry."
        status = exc.status_code
        if attempt >= self.settings.max_retries or not (status == 429 or status >= 500):
            return None
        after = _retry_after(exc.response.headers)
        if after is None:
            return min(0.5 * 2**attempt, self.settings.max_wait)
        return after if after <= self.settings.max_wait else None


def redact(text: str, secret: str | None) -> str:
    "``text`` with every occurrence of ``secret`` (the API key) replaced by a placeholder."
    if not secret or len(secret) < 8:  # a short "key" would blank out ordinary words
        return text
    return text.replace(secret, f"[{KEY_ENV}]")


def public_url(url: str | None) -> str:
    "An endpoint as it may be shown: no user, password, query or fragment."
    if not url:
        return "api.anthropic.com"
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "the endpoint in ANTHROPIC_BASE_URL"
    return (
        f"{parts.scheme}://{host}{port}{parts.path}" if parts.scheme else "the endpoint in ANTHROPIC_BASE_URL"
    )


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                continue
    return None


def _status_reason(exc: Any) -> str:
    status = exc.status_code
    if status == 429:
        after = _retry_after(exc.response.headers)
        return "rate limited (429)" + (f"; the API asks to retry after {after:g} s" if after else "")
    if status == 529 or "overloaded" in str(exc).lower():
        return f"the API is overloaded ({status}); try again shortly"
    if status >= 500:
        return f"the API failed ({status}); try again shortly"
    return f"the API refused the request ({status}): {_message(exc)}"


def _message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])[:200]
    return str(exc)[:200]
