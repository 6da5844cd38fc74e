"""memdex inside coding agents: the Claude Code plugin shipped in ``claude-plugin/`` (a
marketplace folder, package data), the configuration ``memdex setup`` writes for Claude Code,
Codex and Gemini CLI (``setup``, ``configs``), and the session-start context (``context``).
"""

from __future__ import annotations

from pathlib import Path

PLUGIN_DIR = Path(__file__).resolve().parent / "claude-plugin"  # `/plugin marketplace add` this
