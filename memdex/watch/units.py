"""Service definitions that run ``memdex watch`` or ``memdex serve``: a systemd user unit and
a launchd agent."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from xml.sax.saxutils import escape

LABEL = "io.memdex.watch"
DESCRIPTIONS = {
    "watch": "memdex watch: keep the memdex index current as memory files change",
    "serve": "memdex serve: the memdex index kept current and served to searches, HTTP and MCP",
}


def label(service: str) -> str:
    return f"io.memdex.{service}"


def systemd_unit(command: list[str], log_file: Path | None, service: str = "watch") -> str:
    """~/.config/systemd/user/memdex-<service>.service. Paths in ``command`` must be absolute
    (the unit runs in $HOME); ``log_file`` is made so."""
    log = ["--log-file", os.path.realpath(log_file)] if log_file else []
    exec_start = shlex.join(command + log)
    return f"""[Unit]
Description={DESCRIPTIONS[service]}
After=default.target

[Service]
Type=simple
ExecStart={exec_start}
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec=30

[Install]
WantedBy=default.target
"""


def launchd_plist(command: list[str], log_file: Path | None, service: str = "watch") -> str:
    "~/Library/LaunchAgents/io.memdex.<service>.plist"
    args = "\n".join(f"    <string>{escape(a)}</string>" for a in command)
    log = escape(os.path.realpath(log_file)) if log_file else f"/tmp/memdex-{service}.log"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{label(service)}</string>
  <key>ProgramArguments</key>
  <array>
{args}
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardErrorPath</key>
  <string>{log}</string>
</dict>
</plist>
"""


def install_hint(kind: str, service: str = "watch") -> str:
    "Where to save the definition and how to start it."
    if kind == "systemd":
        return (
            f"Save as ~/.config/systemd/user/memdex-{service}.service, then:\n"
            f"  systemctl --user daemon-reload && systemctl --user enable --now memdex-{service}\n"
            f"  journalctl --user -u memdex-{service} -f     # its log"
        )
    return (
        f"Save as ~/Library/LaunchAgents/{label(service)}.plist, then:\n"
        f"  launchctl load -w ~/Library/LaunchAgents/{label(service)}.plist"
    )


INSTALL_HINTS = {kind: install_hint(kind) for kind in ("systemd", "launchd")}
