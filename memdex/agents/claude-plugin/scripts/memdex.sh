#!/bin/sh
# Runs memdex for this plugin: the command and index in the plugin's options (memdex setup
# claude-code writes them, absolute; Claude Code hands them over as CLAUDE_PLUGIN_OPTION_*),
# else memdex on the PATH with its default index ($MEMDEX_DB, else ~/.local/share/memdex).
# The session-start hook (`context`) is silent, exit 0, when memdex is not there.
memdex="${CLAUDE_PLUGIN_OPTION_MEMDEX:-memdex}"
if ! command -v "$memdex" >/dev/null 2>&1; then
    [ "$1" = "context" ] && exit 0
    echo "memdex plugin: no '$memdex' command: pip install memdex, then run memdex setup claude-code" >&2
    exit 127
fi
if [ -n "${CLAUDE_PLUGIN_OPTION_DB:-}" ]; then
    exec "$memdex" --db "$CLAUDE_PLUGIN_OPTION_DB" "$@"
fi
exec "$memdex" "$@"
