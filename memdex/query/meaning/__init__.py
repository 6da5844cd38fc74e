"""Search by meaning: a local sentence-embedding model, vectors in the index, the nearest.

Everything here needs the ``semantic`` extra (numpy, safetensors, tokenizers; onnxruntime
when it is there). Importing this package imports none of it: :func:`available` says
whether it can run, and why not.
"""

from __future__ import annotations

import importlib.util
from functools import cache

EXTRA = "pip install 'memdex[semantic]'"
REQUIRED = ("numpy", "safetensors", "tokenizers")


@cache  # asked once per search; looking the packages up costs a millisecond each time
def available() -> str | None:
    "None when search by meaning can run here, else why not (which package is missing)."
    missing = [name for name in REQUIRED if importlib.util.find_spec(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed ({EXTRA})"
    return None
