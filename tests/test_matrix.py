"""The int8 matrix of query/meaning/matrix.py: its product ranks exactly as the float32 matrix
memdex searched before issue 30, a chunk of several windows scores its best, filters choose
before the product, and its file is used whole or not at all. Vectors here are random (the
search's arithmetic, not the model's quality); test_meaning.py searches with the model."""

from __future__ import annotations

from pathlib import Path

import pytest

np = pytest.importorskip("numpy")

from memdex.query.meaning.matrix import (  # noqa: E402
    Matrix,
    build,
    kept_rows,
    merge,
    open_file,
    save,
)
from memdex.query.meaning.matrix_file import MAGIC, file_state  # noqa: E402
from memdex.query.meaning.vectors import quantize  # noqa: E402

DIM = 48
VERSION = -4_611_686_018_427_387_905  # SQLite's random() is any 64-bit integer


def _stored(
    rng: np.random.Generator, chunks: int, windows: list[int]
) -> tuple[list[bytes], list[np.ndarray]]:
    "Random unit vectors stored as memdex stores them: int8 bytes, a chunk's windows together."
    blobs, floats = [], []
    for n in windows[:chunks]:
        block = rng.standard_normal((n, DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        scale, data = quantize(block)
        blobs.append(data)
        floats.append(
            np.frombuffer(data, dtype=np.int8).astype(np.float32).reshape(n, DIM) * np.float32(scale)
        )
    return blobs, floats


def _keys(ids: np.ndarray) -> np.ndarray:
    return (ids * 7919).astype(np.uint64)


def _before_issue_30(floats: list[np.ndarray], query: np.ndarray, k: int) -> list[int]:
    """The ranking memdex computed before: a float32 matrix of normalised dequantised vectors,
    one per chunk, the product, argpartition then argsort (vectors.py at d76128c)."""
    vectors = np.stack([f[0] for f in floats])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors /= np.where(norms == 0, 1, norms)
    scores = vectors @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in top[np.argsort(-scores[top])]]


@pytest.fixture(scope="module")
def rng() -> np.random.Generator:
    return np.random.default_rng(30)


def _query(rng: np.random.Generator) -> np.ndarray:
    q = rng.standard_normal(DIM).astype(np.float32)
    return q / np.linalg.norm(q)


def test_one_vector_a_chunk_ranks_as_the_float32_matrix_did(rng: np.random.Generator) -> None:
    chunks = 1200  # several blocks, and a last one part-full
    blobs, floats = _stored(rng, chunks, [1] * chunks)
    ids = np.arange(10, 10 + chunks, dtype=np.int64)
    m = build("m", 1, ids, ids // 3, _keys(ids), blobs, DIM)
    for _ in range(5):
        query = _query(rng)
        got = m.nearest(query, 100)
        assert [cid - 10 for cid, _ in got] == _before_issue_30(floats, query, 100)
        want = np.stack([f[0] / np.linalg.norm(f[0]) for f in floats]) @ query
        assert np.allclose([s for _, s in got], np.sort(want)[::-1][:100], atol=1e-5)


def test_a_chunk_of_several_windows_scores_its_best(rng: np.random.Generator) -> None:
    windows = list(rng.integers(1, 5, size=600))
    blobs, floats = _stored(rng, 600, windows)
    ids = np.arange(600, dtype=np.int64) * 2 + 1
    m = build("m", 1, ids, ids, _keys(ids), blobs, DIM)
    assert m.rows == sum(windows) and len(m.chunk_ids) == 600
    query = _query(rng)
    best = np.array([max(float(w @ query / np.linalg.norm(w)) for w in f) for f in floats])
    order = np.argsort(-best, kind="stable")[:50]
    got = m.nearest(query, 50)
    assert [cid for cid, _ in got] == [int(ids[i]) for i in order]
    assert np.allclose([s for _, s in got], best[order], atol=1e-5)


@pytest.mark.parametrize("share", [0.02, 0.3, 0.9])  # gathered rows, and the whole product masked
def test_filters_choose_before_the_product(rng: np.random.Generator, share: float) -> None:
    """The nearest chunks the filters allow: all k of them when as many are allowed, which a
    filter applied after the nearest 100 of all could not give."""
    windows = list(rng.integers(1, 3, size=800))
    blobs, floats = _stored(rng, 800, windows)
    ids = np.arange(800, dtype=np.int64)
    m = build("m", 1, ids, ids, _keys(ids), blobs, DIM)
    allowed = rng.random(800) < share
    query = _query(rng)
    best = np.array([max(float(w @ query / np.linalg.norm(w)) for w in f) for f in floats])
    best[~allowed] = -np.inf
    want = [int(i) for i in np.argsort(-best, kind="stable")[: min(100, int(allowed.sum()))]]
    got = m.nearest(query, 100, allowed)
    assert [cid for cid, _ in got] == want
    assert len(got) == min(100, int(allowed.sum()))


def test_nothing_allowed_finds_nothing(rng: np.random.Generator) -> None:
    blobs, _ = _stored(rng, 10, [1] * 10)
    ids = np.arange(10, dtype=np.int64)
    m = build("m", 1, ids, ids, _keys(ids), blobs, DIM)
    assert m.nearest(_query(rng), 5, np.zeros(10, dtype=bool)) == []
    assert build("m", 1, ids[:0], ids[:0], _keys(ids[:0]), [], DIM).nearest(_query(rng), 5) == []


def test_a_matrix_made_again_from_the_one_before_is_the_one_made_anew(rng: np.random.Generator) -> None:
    """merge() copies the rows of chunks whose key is unchanged and reads the others: chunks
    gone, chunks new, a chunk whose vector was made again (new key) and one that moved to
    another document, with windows of several rows: the same arrays as building from scratch."""
    blobs, _ = _stored(rng, 500, list(rng.integers(1, 4, size=500)))
    ids = np.arange(500, dtype=np.int64) * 3
    before = build("m", 1, ids, ids // 5, _keys(ids), blobs, DIM)
    keep = rng.random(500) < 0.8  # a fifth of the chunks are gone
    new_blobs, _ = _stored(rng, 60, list(rng.integers(1, 4, size=60)))
    new_ids = np.arange(60, dtype=np.int64) * 3 + 1  # between the old ids
    now_ids = np.concatenate([ids[keep], new_ids])
    now_blobs = [b for b, k in zip(blobs, keep, strict=True) if k] + new_blobs
    order = np.argsort(now_ids, kind="stable")
    now_ids, now_blobs = now_ids[order], [now_blobs[i] for i in order]
    documents, keys = now_ids // 5, _keys(now_ids)
    remade, moved = np.flatnonzero(now_ids % 3 == 0)[[10, 20]]  # two chunks the matrix held
    keys[remade] += np.uint64(1)  # made again: another key
    now_blobs[remade] = _stored(rng, 1, [2])[0][0]
    documents[moved] += 1  # a chunk whose document is another (never, but never wrong either)
    fresh = {int(c): b for c, b, k in zip(now_ids, now_blobs, keys, strict=True)}
    merged = merge(before, 2, now_ids, documents, keys, fresh, DIM)
    anew = build("m", 2, now_ids, documents, keys, now_blobs, DIM)
    for name in ("vectors", "factors", "starts", "chunk_ids", "document_ids", "keys"):
        assert np.array_equal(getattr(merged, name), getattr(anew, name)), name
    kept, _ = kept_rows(before, now_ids, documents, keys)
    assert int(kept.sum()) == int(keep.sum()) - 2  # all that stayed but the two changed


@pytest.fixture
def saved(tmp_path: Path, rng: np.random.Generator) -> tuple[Path, Matrix]:
    blobs, _ = _stored(rng, 300, list(rng.integers(1, 4, size=300)))
    ids = np.arange(300, dtype=np.int64) + 7
    m = build("model@128w", VERSION, ids, ids % 11, _keys(ids), blobs, DIM)
    path = tmp_path / "memdex.db.vectors"
    save(path, m)
    return path, m


def test_the_file_gives_back_the_same_matrix_memory_mapped(
    saved: tuple[Path, Matrix], rng: np.random.Generator
) -> None:
    path, m = saved
    found, state = open_file(path, "model@128w", VERSION)
    assert state == "current" and found is not None and found.source == "file"
    for name in ("vectors", "factors", "starts", "chunk_ids", "document_ids", "keys"):
        assert np.array_equal(getattr(found, name), getattr(m, name)), name
    query = _query(rng)
    assert found.nearest(query, 20) == m.nearest(query, 20)
    assert file_state(path, "model@128w", VERSION) == "current"


def test_a_file_of_another_version_or_model_is_stale(saved: tuple[Path, Matrix]) -> None:
    path, _ = saved
    assert open_file(path, "model@128w", VERSION + 1) == (None, "stale")
    assert open_file(path, "model@128", VERSION) == (None, "stale")
    assert file_state(path, "model@128w", VERSION + 1) == "stale"
    assert open_file(path.with_name("nothing.vectors"), "model@128w", VERSION) == (None, "missing")


def _truncated(data: bytes) -> bytes:
    return data[:-1]


def _grown(data: bytes) -> bytes:
    return data + b"\0" * 64


def _bad_magic(data: bytes) -> bytes:
    return b"X" + data[1:]


def _empty(data: bytes) -> bytes:
    return b""


def _garbage_header(data: bytes) -> bytes:
    return data[: len(MAGIC) + 4] + b"{" * 20 + data[len(MAGIC) + 24 :]


def _rows_out_of_order(data: bytes) -> bytes:
    "The chunk ids' array reversed: same size and header, contents that cannot be right."
    found, _ = open_file_bytes(data)
    ids = found.chunk_ids.tobytes()
    at = data.index(ids)
    return data[:at] + found.chunk_ids[::-1].tobytes() + data[at + len(ids) :]


def open_file_bytes(data: bytes) -> tuple[Matrix, str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.vectors"
        path.write_bytes(data)
        found, state = open_file(path, "model@128w", VERSION)
        assert found is not None
        return Matrix(**{**found.__dict__, "chunk_ids": found.chunk_ids.copy()}), state


@pytest.mark.parametrize(
    "damage", [_truncated, _grown, _bad_magic, _empty, _garbage_header, _rows_out_of_order]
)
def test_a_corrupt_file_is_never_used(saved: tuple[Path, Matrix], damage: object) -> None:
    path, _ = saved
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert open_file(path, "model@128w", VERSION) == (None, "corrupt")
