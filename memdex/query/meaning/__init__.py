"""Search by meaning: a local sentence-embedding model, vectors in the index, the nearest.

Everything here needs the ``semantic`` extra (numpy, safetensors, tokenizers; onnxruntime
when it is there). Importing this package imports none of it: :func:`available` says
whether it can run, and why not.
"""

from __future__ import annotations

import importlib.util
import os
import sys
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


_blas: dict[str, bool] = {}


def pin_blas() -> None:
    """Before a process first imports numpy: OpenBLAS then starts no threads of its own, which
    a search never uses (the query and the product run on one thread; the encoder's runs are
    its threads). Starting them cost a CLI search 40 ms of CPU, and holding them to one thread
    afterwards through threadpoolctl another 8 ms. A setting of the user's own is kept."""
    if "numpy" not in sys.modules and "one_thread" not in _blas:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        _blas["one_thread"] = os.environ["OPENBLAS_NUM_THREADS"].strip() == "1"


def blas_pinned() -> bool:
    "Whether BLAS was held to one thread before numpy loaded it (by :func:`pin_blas`)."
    if not _blas.get("one_thread"):
        return False
    if "openblas" not in _blas:  # numpy built with another BLAS does not read the variable
        import numpy as np

        name = str(np.__config__.CONFIG.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
        _blas["openblas"] = "openblas" in name.lower()
    return _blas["openblas"]
