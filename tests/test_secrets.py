"""Secrets masked before they reach the index (issue 38): an AWS key, a GitHub token and a
private key planted in a real session log are found by no search, by no table, and the
words around them still find it; `memdex status` counts them; a root indexed with
--keep-secrets keeps them; an index written before masking is masked once, in place; and
what real logs hold that only looks random (commits, UUIDs, hashes, images) is kept."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdex import secrets
from memdex.doors.cli import cli
from memdex.store import db
from memdex.tokens import index_text

from .conftest import shared
from .ingest.test_pipeline import fts_integrity
from .test_faults import as_schema_12

# A real Claude Code session (chiphuyen/sniffly's sample data, MIT): music from code.
PROJECT = ("chats", "claude-code", "chiphuyen-sniffly", "-Users-chip-dev-ai-music")
SESSION = "ba79134d-b6e9-4867-af0c-6941038c9e4b.jsonl"
# A real session with a screenshot pasted (base64 PNG), commits and UUIDs in it.
IMAGES = (
    "chats",
    "claude-code",
    "daaain-claude-code-log",
    "-Users-dain-workspace-danieldemmel-me-next",
    "4379d1bf-ccb1-414e-a856-9791b73f3af2.jsonl",
)

AWS_KEY = "AKIAQ3EGRXUZ7PLMNB2T"
GITHUB_TOKEN = "ghp_8kZq2LmN4pQr6StUv8WxYz0AbCdEfGhIjKlM"
KEY_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "VTLw7onLRnrq0IzW7yWR7QkrmBL7jTKEn5uqKhbwKfBstIsbMY2Zkp18gnTxKLxo",
)
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(KEY_BODY) + "\n-----END RSA PRIVATE KEY-----"
PLANTED = (
    "Deploy notes for the zebrafish pipeline: export AWS_ACCESS_KEY_ID=" + AWS_KEY + " and use "
    "the token "
    + GITHUB_TOKEN
    + " for the marmalade repository. The key:\n"
    + PRIVATE_KEY
    + "\nkeep it quiet."
)
SECRETS = (AWS_KEY, GITHUB_TOKEN, *KEY_BODY)


def run(db_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)


def found(db_path: Path, query: str, *options: str) -> list[str]:
    "The paths a search finds."
    result = run(db_path, "search", query, "--json", *options)
    assert result.exit_code == 0, result.output
    return [hit["path"] for hit in json.loads(result.stdout)["results"]]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    "A copy of a real session log, one of its user messages replaced by a pasted deploy note."
    folder = tmp_path / "projects" / PROJECT[-1]
    folder.mkdir(parents=True)
    lines = shared(*PROJECT, SESSION).read_text("utf-8").splitlines()
    for n, line in enumerate(lines):
        record = json.loads(line)
        if record.get("type") == "user" and isinstance(record["message"].get("content"), str):
            record["message"]["content"] = PLANTED
            lines[n] = json.dumps(record)
            break
    (folder / SESSION).write_text("\n".join(lines) + "\n", "utf-8")
    return tmp_path / "projects"


def stored_text(conn: sqlite3.Connection) -> str:
    "Every text the index stores about its documents, and every token its full-text tables hold."
    parts = [r[0] for r in conn.execute("SELECT heading || ' ' || text || ' ' || meta FROM chunks")]
    parts += [
        r[0] for r in conn.execute("SELECT title || description || tags || topics || meta FROM documents")
    ]
    parts += [r[0] for r in conn.execute("SELECT topic FROM topics")]
    parts += [r[0] for r in conn.execute("SELECT term FROM chunks_vocab")]
    parts += [r[0] for r in conn.execute("SELECT term FROM documents_vocab")]
    parts += [r[0] for r in conn.execute("SELECT state FROM file_tails")]  # where a log's reader stopped
    return "\n".join(parts)


def tokens_matched(conn: sqlite3.Connection, secret: str) -> int:
    "Rows of chunks_fts and bodies_fts that hold the secret's tokens as a phrase."
    phrase = '"' + index_text(secret) + '"'
    chunks = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (phrase,))
    bodies = conn.execute("SELECT count(*) FROM bodies_fts WHERE bodies_fts MATCH ?", (phrase,))
    return int(chunks.fetchone()[0]) + int(bodies.fetchone()[0])


def test_planted_secrets_are_found_by_no_search_and_the_words_around_them_are(
    db_path: Path, logs: Path
) -> None:
    assert run(db_path, "index", str(logs)).exit_code == 0
    log = str(logs / PROJECT[-1] / SESSION)
    for secret in SECRETS:
        assert found(db_path, secret) == [], secret
        assert found(db_path, '"' + secret + '"', "--raw") == [], secret
    assert found(db_path, "zebrafish pipeline") == [log]
    assert found(db_path, "marmalade repository") == [log]
    assert found(db_path, "keep it quiet") == [log]
    # the markers' words find it as a kind of secret
    assert found(db_path, "secret aws access key") == [log]
    assert found(db_path, "secret private key") == [log]
    conn = db.connect(db_path)
    text = stored_text(conn)
    for secret in SECRETS:
        assert secret not in text
        assert secret.lower() not in text
        assert tokens_matched(conn, secret) == 0
    assert "export AWS_ACCESS_KEY_ID=[secret:aws-access-key] and use the token [secret:github-token]" in text
    fts_integrity(conn)
    status = json.loads(run(db_path, "status", "--json").stdout)["secrets"]
    assert status["masked"] == 3 and status["documents"] == 1
    assert {k["kind"]: k["masked"] for k in status["by_kind"]} == {
        "aws-access-key": 1,
        "github-token": 1,
        "private-key": 1,
    }
    shown = run(db_path, "status").stdout
    assert "Secrets masked: 3 in 1 document (" in shown


def test_a_session_log_that_grows_is_masked_in_what_it_gained(db_path: Path, logs: Path) -> None:
    log = logs / PROJECT[-1] / SESSION
    assert run(db_path, "index", str(logs)).exit_code == 0
    record = json.loads(log.read_text("utf-8").splitlines()[-1])
    record["uuid"] = "0f9e1c55-5a8e-4d52-9d0b-3c1d2a4e5f60"
    record["type"] = "user"
    record["message"] = {
        "role": "user",
        "content": "the quokka token is ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0PpOoNn",
    }
    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    report = json.loads(run(db_path, "index", str(logs), "--json").stdout)
    assert report["updated"] == 1
    assert found(db_path, "ghp_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0PpOoNn") == []
    assert found(db_path, "quokka") == [str(log)]
    status = json.loads(run(db_path, "status", "--json").stdout)["secrets"]
    assert {k["kind"]: k["masked"] for k in status["by_kind"]}["github-token"] == 2


def test_a_root_indexed_with_keep_secrets_keeps_them_until_told_to_mask(db_path: Path, logs: Path) -> None:
    result = run(db_path, "index", str(logs), "--keep-secrets")
    assert result.exit_code == 0
    assert "warning: --keep-secrets" in result.stderr
    log = str(logs / PROJECT[-1] / SESSION)
    assert found(db_path, AWS_KEY) == [log]
    assert found(db_path, GITHUB_TOKEN) == [log]
    status = json.loads(run(db_path, "status", "--json").stdout)
    assert status["secrets"]["masked"] == 0 and status["secrets"]["kept_by_roots"] == [str(logs)]
    assert [r["keep_secrets"] for r in status["roots"]] == [True]
    # remembered: indexing the roots again keeps them
    assert run(db_path, "index").exit_code == 0
    assert found(db_path, AWS_KEY) == [log]
    # --mask-secrets: the root is read again, masked
    assert run(db_path, "index", str(logs), "--mask-secrets").exit_code == 0
    assert found(db_path, AWS_KEY) == []
    assert found(db_path, "zebrafish") == [log]
    assert json.loads(run(db_path, "status", "--json").stdout)["secrets"]["masked"] == 3
    fts_integrity(db.connect(db_path))


def test_keep_secrets_without_a_path_is_a_usage_error(db_path: Path, logs: Path) -> None:
    assert run(db_path, "index", str(logs)).exit_code == 0
    result = run(db_path, "index", "--mask-secrets")
    assert result.exit_code == 2
    assert "--mask-secrets is remembered per root: give the PATHs it is for." in result.output


def test_an_index_written_before_masking_is_masked_once_in_place(
    db_path: Path, logs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # As memdex left it before migration 13: its secrets in every table and full-text index.
    assert run(db_path, "index", str(logs), "--keep-secrets").exit_code == 0
    with sqlite3.connect(db_path) as old:  # a vector for every chunk, as `memdex embed` leaves them
        old.execute(
            "INSERT INTO chunk_vectors (chunk_id, model, text_hash, scale, vector) "
            "SELECT id, 'm', 'h', 1.0, x'00' FROM chunks"
        )
        chunks = old.execute("SELECT count(*) FROM chunks").fetchone()[0]
    as_schema_12(db_path)
    (logs / PROJECT[-1] / SESSION).unlink()  # gone: it cannot be read again
    capfd.readouterr()
    conn = db.connect(db_path)
    said = capfd.readouterr().err
    assert re.search(r"memdex: masked 3 secrets already in .* in 1 document", said), said
    for secret in SECRETS:
        assert secret not in stored_text(conn)
        assert tokens_matched(conn, secret) == 0
    fts_integrity(conn)
    # the vectors of the chunk that held them go (memdex embed makes them again); the rest stay
    kept = {r[0] for r in conn.execute("SELECT chunk_id FROM chunk_vectors")}
    masked = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE text LIKE '%[secret:%'")}
    assert len(masked) == 1 and not kept & masked and len(kept) == chunks - 1
    conn.close()
    assert found(db_path, "zebrafish pipeline") != []
    assert json.loads(run(db_path, "status", "--json").stdout)["secrets"]["masked"] == 3
    capfd.readouterr()
    db.connect(db_path).close()  # once: the rules are recorded
    assert "masked" not in capfd.readouterr().err


def test_new_rules_mask_the_index_again_once(
    db_path: Path, logs: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert run(db_path, "index", str(logs), "--keep-secrets").exit_code == 0
    with sqlite3.connect(db_path) as older:  # masked by other rules, and the root masks
        older.execute("UPDATE roots SET keep_secrets = 0")
        older.execute("UPDATE secret_rules SET identity = 'memdex-secrets 0'")
    capfd.readouterr()
    db.connect(db_path).close()
    assert "memdex: masked 3 secrets already in" in capfd.readouterr().err
    assert found(db_path, AWS_KEY) == []


def test_show_masks_a_file_read_whole_and_keeps_its_lines(db_path: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text(
        "# Deploy\n\nThe key is " + AWS_KEY + ".\n\n" + PRIVATE_KEY + "\nAfter the key.\n"
    )
    assert run(db_path, "index", str(notes)).exit_code == 0
    shown = run(db_path, "show", str(notes / "deploy.md"))
    assert shown.exit_code == 0, shown.output
    assert AWS_KEY not in shown.stdout and KEY_BODY[0] not in shown.stdout
    lines = shown.stdout.splitlines()
    assert lines[2] == "The key is [secret:aws-access-key]."
    assert lines[4] == "[secret:private-key]"
    assert lines[4 + PRIVATE_KEY.count("\n") + 1] == "After the key."


def test_real_logs_commits_uuids_hashes_and_images_are_kept() -> None:
    text = shared(*IMAGES).read_text("utf-8")
    masked = secrets.mask(text)
    assert masked.kinds == {}
    assert masked.text == text
    # what it holds that looks random, and stays
    assert re.search(r'"data":"iVBORw0KGgo[A-Za-z0-9+/]{1000}', text)
    assert re.search(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", text)
    for looks_random in (
        "ad2d13474e6b9250b23a3323ea6997603f2e9ef5",  # a git commit
        "ab14fe397f91d5f283525b3178d2314aef552f761131c42172a21b7bf735e73d",  # a SHA-256
        "4379d1bf-ccb1-414e-a856-9791b73f3af2",
        "sha256:" + "c2d2cd48efcbba4c2bc221e72bcce69434e9ae8cd4d927badfe83e3426b39c95",
        "password = getpass.getpass()",
        "api_key = os.environ['OPENAI_API_KEY']",
        'token: "${GITHUB_TOKEN}"',
        "postgres://user:password@localhost/db",
    ):
        assert secrets.mask(looks_random).text == looks_random


@pytest.mark.parametrize(
    ("text", "kind", "kept"),
    [
        (
            "export GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz012345",
            "github-token",
            "export GITHUB_TOKEN=",
        ),
        (
            "curl -H 'Authorization: Bearer sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90'",
            "openai-key",
            "Authorization: Bearer ",
        ),
        (
            "DATABASE_URL=postgres://app:Zx81mQ2vLp0Rt7@db.internal:5432/app",
            "url-password",
            "postgres://app:",
        ),
        ('"client_secret": "8Fq2LmN4pQr6StUv8WxYz0Ab"', "password", '"client_secret": "'),
        ("SLACK=xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx", "slack-token", "SLACK="),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY1",
            "aws-secret-key",
            "aws_secret_access_key = ",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt",
            "jwt ",
        ),
    ],
)
def test_each_kind_is_masked_and_what_names_it_stays(text: str, kind: str, kept: str) -> None:
    masked = secrets.mask(text)
    assert masked.kinds == {kind: 1}, masked.text
    assert kept + secrets.marker(kind) in masked.text


def test_a_conversations_message_offsets_follow_the_masked_text() -> None:
    first = "my key is " + AWS_KEY + " ok"
    second = "second message"
    text = first + "\n\n" + second
    meta: dict[str, object] = {"messages": [[0, 0, "user", None], [1, len(first) + 2, "assistant", None]]}
    counts: Counter[str] = Counter()
    _, masked = secrets.mask_chunk("", text, meta, counts)
    offsets = [m[1] for m in meta["messages"]]  # type: ignore[attr-defined]
    assert masked[offsets[1] :] == second
    assert counts == {"aws-access-key": 1}


def test_a_private_key_cut_by_a_chunk_is_masked_on_both_sides() -> None:
    head = "-----BEGIN PRIVATE KEY-----\n" + KEY_BODY[0] + "\n" + KEY_BODY[1]
    tail = KEY_BODY[1] + "\n-----END PRIVATE KEY-----\nthen the next step"
    assert secrets.mask(head).text == "[secret:private-key]"
    assert secrets.mask(tail).text == "[secret:private-key]\nthen the next step"


def test_every_kind_is_documented_and_tokenizes_to_its_words() -> None:
    documented = (Path(__file__).parent.parent / "docs" / "secrets.md").read_text("utf-8")
    for kind in {rule.kind for rule in secrets.RULES}:
        assert f"`{kind}`" in documented, kind
        assert index_text(secrets.marker(kind)).split()[0] == "secret"


def test_words_taken_from_a_secret_are_no_topics_and_named_values_are_masked() -> None:
    "Review of #38: a conversation's topics (lowercased words of its text) and meta kept secrets."
    from memdex.models import Chunk, Document
    from memdex.secrets import mask_document

    jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    text = f"Deploy the zebrafish pipeline with {AWS_KEY} and {jwt}\n{PRIVATE_KEY}"
    words = [AWS_KEY.lower(), *jwt.lower().split("."), KEY_BODY[0].lower(), "zebrafish", "pipeline"]
    doc = Document(
        key="s1",
        kind="claude-code",
        title="Deploy the zebrafish pipeline",
        chunks=[Chunk(heading="", text=text)],
        size_bytes=len(text),
        topics=[(word, "conversation") for word in words],
        meta={"db_password": "Zq8xT3vLp9Wm2Kc", "project": "/work/zebrafish"},
    )
    kinds = mask_document(doc)
    assert [topic for topic, _ in doc.topics] == ["zebrafish", "pipeline"]
    assert doc.meta == {"db_password": "[secret:password]", "project": "/work/zebrafish"}
    assert kinds["password"] == 1 and kinds["aws-access-key"] == 1 and kinds["jwt"] == 1


def test_a_bearer_token_is_masked_whatever_its_case() -> None:
    for header in ("Authorization: Bearer", "authorization: bearer", "AUTHORIZATION: BEARER"):
        assert secrets.mask(f"{header} 8f3kLq9ZpT7vWn2cRf8YhUe4Xb").text == f"{header} [secret:bearer-token]"


def test_a_body_before_its_footer_is_masked_from_its_first_line() -> None:
    "Review of #38: the window reaching back from a footer began four characters in."
    text = "\n".join(KEY_BODY) + "\n-----END RSA PRIVATE KEY----- tail"
    assert secrets.mask(text).text == "[secret:private-key] tail"
