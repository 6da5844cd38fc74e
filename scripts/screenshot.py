#!/usr/bin/env python3
"""Type a query into Datasette's search box in headless Chromium and save a screenshot.

Starts `memdex datasette` on a free loopback port, opens the chunks table in Debian's
Chromium (driven through chromedriver's W3C WebDriver API, so no Python package is
needed), types the query into the search box, presses Enter, waits for the results
heading, and saves the page as a PNG. Prints a JSON report: the URL reached, the results
heading, the PNG's path and size.

Needs: apt-get install chromium chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver).

Example:

    python scripts/screenshot.py --db serena.db --query worktree --out docs/datasette-search.png
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
ENTER = "\ue007"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def until(check: Callable[[], Any], what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.1)
    raise click.ClickException(f"timed out waiting for {what}")


class WebDriver:
    "Just enough of the W3C WebDriver protocol, over chromedriver's HTTP port."

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = ""

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)["value"]

    def ready(self) -> bool:
        try:
            return bool(self.call("GET", "/status")["ready"])
        except OSError:
            return False

    def start(self, chromium: str) -> None:
        args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--window-size=1400,2000",
        ]
        options = {"binary": chromium, "args": args}
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
        self.session = f"/session/{self.call('POST', '/session', caps)['sessionId']}"

    def find(self, css: str) -> str | None:
        try:
            return str(
                self.call("POST", f"{self.session}/element", {"using": "css selector", "value": css})[ELEMENT]
            )
        except urllib.error.HTTPError:
            return None

    def text(self, css: str) -> str:
        "The element's text, or '' while the page is still loading (or just replaced it)."
        element = self.find(css)
        try:
            return str(self.call("GET", f"{self.session}/element/{element}/text")) if element else ""
        except urllib.error.HTTPError:
            return ""


def start_datasette(db: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memdex", "--db", str(db), "datasette", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )

    def port() -> str | None:
        if proc.poll() is not None:
            raise click.ClickException("memdex datasette exited: " + log.read_text(errors="replace"))
        m = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
        return m.group(1) if m else None

    return proc, until(port, "memdex datasette to start")


@click.command()
@click.option("--db", "db_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True)
@click.option("--query", default="worktree", show_default=True, help="What to type in the search box.")
@click.option("--table", default="chunks", show_default=True, help="Table whose search box to use.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("datasette-search.png"))
def main(db_path: Path, query: str, table: str, out: Path) -> None:
    """Screenshot a Datasette search typed in headless Chromium (JSON report on stdout).

    Example:

        python scripts/screenshot.py --db serena.db --query worktree --out search.png
    """
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and chromedriver):
        raise click.ClickException(
            "needs chromium and chromedriver: apt-get install chromium chromium-driver"
        )
    with tempfile.TemporaryDirectory() as tmp:
        server, base = start_datasette(db_path, Path(tmp) / "datasette.log")
        port = free_port()
        driver_proc = subprocess.Popen(
            [chromedriver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        browser = WebDriver(f"http://127.0.0.1:{port}")
        try:
            until(browser.ready, "chromedriver")
            browser.start(chromium)
            browser.call("POST", f"{browser.session}/url", {"url": f"{base}/{db_path.stem}/{table}"})
            box = until(lambda: browser.find("#_search"), "the search box")
            browser.call("POST", f"{browser.session}/element/{box}/value", {"text": query + ENTER})
            heading = until(
                lambda: (lambda t: t if "search matches" in t else "")(browser.text("h3")), "the results"
            )
            url = browser.call("GET", f"{browser.session}/url")
            out.write_bytes(base64.b64decode(browser.call("GET", f"{browser.session}/screenshot")))
        finally:
            if browser.session:
                try:
                    browser.call("DELETE", browser.session)
                except OSError:
                    pass
            driver_proc.terminate()
            driver_proc.wait(10)
            server.terminate()
            server.wait(10)
    click.echo(json.dumps({"url": url, "heading": heading, "png": str(out), "bytes": out.stat().st_size}))


if __name__ == "__main__":
    main()
