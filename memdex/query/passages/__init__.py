"""Passages: which text of the ranked chunks a chunk search (and so an answer) hands out.

At ``--granularity chunk`` the cascade ranks chunks; this package decides what of them to show
within the budget. It has one way in, :func:`choose`, called by the cascade with its ranked
chunk candidates:

- a conversation's chunk becomes windows of messages: each message of the best
  ``ranking.WINDOW_POOL`` chunks is scored (``evidence``: its own words and the related words
  of the best messages, ``feedback``; its neighbours' words; where its chunk and conversation
  stand), the best come with the messages around them (``window``), and windows that overlap
  or touch are merged (``choose``);
- any other chunk (a note's section) competes as one unit, scored the same way, and is handed
  out whole.

``answer.sources`` re-packs the windows under an answer's own budget with ``window.seeds``
and ``window.merge``.
"""

from memdex.query.passages.choose import LeftOut, Pick, Picked, choose
from memdex.query.passages.window import Turn, Window, merge, seeds

__all__ = ["LeftOut", "Pick", "Picked", "Turn", "Window", "choose", "merge", "seeds"]
