"""Service definitions that run ``memdex watch``: a systemd user unit and a launchd agent."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from xml.sax.saxutils import escape

LABEL = "io.memdex.watch"


def systemd_unit(command: list[str], log_file: Path | None) -> str:
    """~/.config/systemd/user/memdex-watch.service. Paths in ``command`` must be absolute (the
    unit runs in $HOME); ``log_file`` is made so."""
    log = ["--log-file", os.path.realpath(log_file)] if log_file else []
    exec_start = shlex.join(command + log)
    return f"""[Unit]
Description=memdex watch: keep the memdex index current as memory files change
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


def launchd_plist(command: list[str], log_file: Path | None) -> str:
    "~/Library/LaunchAgents/io.memdex.watch.plist"
    args = "\n".join(f"    <string>{escape(a)}</string>" for a in command)
    log = escape(os.path.realpath(log_file)) if log_file else "/tmp/memdex-watch.log"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LABEL}</string>
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


INSTALL_HINTS = {
    "systemd": (
        "Save as ~/.config/systemd/user/memdex-watch.service, then:\n"
        "  systemctl --user daemon-reload && systemctl --user enable --now memdex-watch\n"
        "  journalctl --user -u memdex-watch -f     # its log"
    ),
    "launchd": (
        f"Save as ~/Library/LaunchAgents/{LABEL}.plist, then:\n"
        f"  launchctl load -w ~/Library/LaunchAgents/{LABEL}.plist"
    ),
}
