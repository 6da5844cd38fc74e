"""memdex lint, keywords and cost on the real Serena corpora, and on copies with faults planted."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.serena.tiers import scan
from memdex.store import db

from .conftest import shared


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def lint_json(path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = run("lint", str(path), "--json", *args)
    return result.exit_code, json.loads(result.stdout)


def findings(report: dict[str, Any], code: str) -> list[tuple[str, int | None]]:
    return [(f["file"], f["line"]) for f in report["findings"] if f["code"] == code]


def digest(folder: Path) -> str:
    "One hash of every file's path, bytes and mtime: anything written shows."
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(
                str(p.relative_to(folder)).encode() + p.read_bytes() + str(p.stat().st_mtime_ns).encode()
            )
    return h.hexdigest()


# -- the real corpora -----------------------------------------------------------------------------------
def test_flat_layout_five_columns_three_empty_files_no_missing_targets() -> None:
    code, report = lint_json(shared("serena-memories-flat"))
    assert code == 1
    malformed = [f for f in report["findings"] if f["code"] == "malformed-table"]
    five = [f for f in malformed if f["file"] == "skills-serena-index.md"]
    assert five and five[0]["line"] == 1 and "5-column table" in five[0]["message"]
    assert five[0]["severity"] == "error"
    assert sorted(f for f, _ in findings(report, "empty-file")) == [
        "adr-014-findings.md",
        "adr-019-quantitative-analysis.md",
        "bounded-contexts.md",
    ]
    assert findings(report, "missing-target") == []


def test_nested_layout_counts_orphans_by_the_link_graph() -> None:
    root = shared("serena-memories")
    code, report = lint_json(root)
    assert report["orphans"] == 376 == len(findings(report, "orphan"))
    # not by file prefix: orphans sit in subfolders, and under every kind of name
    orphans = [f for f, _ in findings(report, "orphan")]
    assert sum("/" in f for f in orphans) > 300
    assert findings(report, "missing-target") == []
    # rows after a blank line belong to the table above: those files are not orphans
    assert "security/pr4247-review.md" not in orphans
    assert ("skills-security-index.md", 17) in findings(report, "row-outside-table")


def test_lint_writes_nothing() -> None:
    root = shared("serena-memories-flat")
    before = digest(root)
    lint_json(root)
    assert digest(root) == before


# -- faults planted in a copy -------------------------------------------------------------------------
@pytest.fixture
def nested_copy(tmp_path: Path) -> Path:
    target = tmp_path / "memories"
    shutil.copytree(shared("serena-memories"), target)
    return target


def append(path: Path, line: str) -> int:
    "Add a line at the end of a file; return its line number."
    text = path.read_text()
    if not text.endswith("\n"):
        text += "\n"
    path.write_text(text + line + "\n")
    return len((text + line).splitlines())


@pytest.mark.slow
def test_each_planted_fault_is_found_with_its_file_and_line(nested_copy: Path) -> None:
    _, before = lint_json(nested_copy)
    git = nested_copy / "skills-git-index.md"
    rows = [line for line in git.read_text().splitlines() if line.startswith("| ") and "[" in line]
    missing = append(
        git, "| ghost phantom missing vanished absent | [git/git-no-such-memory](git/git-no-such-memory.md) |"
    )
    duplicate = append(git, rows[0])
    # 4 of 5 keywords taken from other rows: 20% unique
    shared_words = [w for w in rows[1].split("|")[1].split()][:2] + [
        w for w in rows[2].split("|")[1].split()
    ][:2]
    (nested_copy / "git" / "git-new-memory.md").write_text("# New\n\nA new memory.\n")
    low = append(git, f"| {' '.join(shared_words)} zzyzx | [git/git-new-memory](git/git-new-memory.md) |")
    ci = nested_copy / "skills-ci-infrastructure-index.md"
    ci.write_text("# CI Infrastructure Skills\n\n" + ci.read_text())
    (nested_copy / "skill-legacy-thing.md").write_text("An old skill file.\n")

    code, after = lint_json(nested_copy)
    assert code == 1
    new = [(f["code"], f["file"], f["line"]) for f in after["findings"] if f not in before["findings"]]
    assert ("missing-target", "skills-git-index.md", missing) in new
    assert ("duplicate-row", "skills-git-index.md", duplicate) in new
    assert ("low-uniqueness", "skills-git-index.md", low) in new
    assert ("not-lookup-table", "skills-ci-infrastructure-index.md", 1) in new
    assert ("deprecated-prefix", "skill-legacy-thing.md", None) in new
    low_finding = next(f for f in after["findings"] if f["code"] == "low-uniqueness" and f["line"] == low)
    assert low_finding["message"].startswith("20% of the row's keywords")


def small_folder(tmp_path: Path) -> Path:
    root = tmp_path / "mem"
    (root / "git").mkdir(parents=True)
    (root / "memory-index.md").write_text(
        "|git branches worktrees cleanup rebase: [skills-git-index](skills-git-index.md) (40)\n"
    )
    (root / "skills-git-index.md").write_text(
        "| Keywords | File |\n|----------|------|\n"
        "| worktree prune cleanup stale detached session branch remove lock porcelain "
        "| [git/git-worktree](git/git-worktree.md) |\n"
        "| rebase conflict continue abort rerere interactive autosquash fixup onto upstream "
        "| [git/git-rebase](git/git-rebase.md) |\n"
    )
    # ADR-017's atomic format: no title, no date or status line, no parent pointer
    (root / "git" / "git-worktree.md").write_text("Prune stale worktrees after a session.\n")
    (root / "git" / "git-rebase.md").write_text("Abort a rebase with conflicts, then rerere.\n")
    return root


def test_a_clean_folder_passes_and_warnings_block_only_when_strict(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    assert run("lint", str(root)).exit_code == 0
    _, report = lint_json(root)
    assert report["findings"] == [] and report["rows"] == 3
    (root / "git" / "git-orphan.md").write_text("# Orphan\n\nNobody points here.\n")
    assert run("lint", str(root)).exit_code == 0  # a warning
    code, report = lint_json(root, "--strict")
    assert code == 1 and findings(report, "orphan") == [("git/git-orphan.md", None)]


@pytest.mark.parametrize(
    ("index_text", "code", "line"),
    [
        (
            "| Keywords | File |\n|---|---|\n| a b c d e | [git/git-worktree](git/git-worktree.md) | extra |\n",
            "malformed-table",
            3,
        ),
        (
            "| Keywords | File |\n|---|---|\n| a \\| b c d e f | [git/git-worktree](git/git-worktree.md) |\n",
            "escaped-pipe",
            3,
        ),
        ("| ID | Name | Status |\n|---|---|---|\n| 1 | worktree | ok |\n", "malformed-table", 1),
        (
            "| Keywords | File |\n|---|---|\n| worktree prune | [git/git-worktree](git/git-worktree.md) |\n",
            "few-keywords",
            3,
        ),
        (
            "**Updated**: 2025-12-28\n\n| Keywords | File |\n|---|---|\n| a b c d e | [git/git-worktree](git/git-worktree.md) |\n",
            "not-lookup-table",
            1,
        ),
        (
            "Parent: [memory-index](memory-index.md)\n\n| Keywords | File |\n|---|---|\n| a b c d e | [git/git-worktree](git/git-worktree.md) |\n",
            "not-lookup-table",
            1,
        ),
        ("Just some notes about git.\n", "empty-index", None),
    ],
)
def test_malformed_indexes_are_reported_never_silently_empty(
    tmp_path: Path, index_text: str, code: str, line: int | None
) -> None:
    root = small_folder(tmp_path)
    (root / "skills-git-index.md").write_text(index_text)
    _, report = lint_json(root)
    assert ("skills-git-index.md", line) in findings(report, code), report["findings"]


@pytest.mark.parametrize("form", ["line", "table"])
def test_memory_index_must_reach_every_domain_index(tmp_path: Path, form: str) -> None:
    root = small_folder(tmp_path)
    (root / "skills-ci-index.md").write_text(
        "| Keywords | File |\n|---|---|\n| cache lockfile hash restore key | [git/git-rebase](git/git-rebase.md) |\n"
    )
    if form == "table":
        (root / "memory-index.md").write_text(
            "| Task Keywords | Essential Memories |\n|---|---|\n"
            "| git branches worktrees cleanup rebase | [skills-git-index](skills-git-index.md) (40) |\n"
        )
    _, report = lint_json(root)
    assert findings(report, "unreached-index") == [("skills-ci-index.md", None)]
    (root / "memory-index.md").write_text(
        (root / "memory-index.md").read_text()
        + "|ci cache lockfile: [skills-ci-index](skills-ci-index.md) (30)\n"
        if form == "line"
        else (root / "memory-index.md").read_text()
        + "| ci cache lockfile | [skills-ci-index](skills-ci-index.md) |\n"
    )
    _, report = lint_json(root)
    assert findings(report, "unreached-index") == []


def test_no_memory_index_is_an_error(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "memory-index.md").unlink()
    code, report = lint_json(root)
    assert code == 1 and findings(report, "no-top-index") == [("memory-index.md", None)]


def test_uniqueness_threshold_is_configurable(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "skills-git-index.md").write_text(
        "| Keywords | File |\n|---|---|\n"
        "| worktree prune cleanup stale session | [git/git-worktree](git/git-worktree.md) |\n"
        "| worktree prune cleanup rebase abort | [git/git-rebase](git/git-rebase.md) |\n"
    )
    assert findings(lint_json(root)[1], "low-uniqueness") == []  # 2 of 5 unique: 40%
    assert len(findings(lint_json(root, "--min-unique", "0.5")[1], "low-uniqueness")) == 2


# -- ADR-017's format rules: atomic files, {domain}-{description} names, 10-15 keywords ------------------
def test_an_atomic_file_with_a_title_a_date_and_a_parent_is_reported(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "git" / "git-worktree.md").write_text(
        "# Worktree cleanup\n"
        "\n"
        "**Date**: 2025-12-23 | **Status**: Active\n"
        "\n"
        "## Index\n"
        "\n"
        "Parent: [skills-git-index](skills-git-index.md)\n"
        "\n"
        "Prune stale worktrees after a session.\n"
    )
    assert run("lint", str(root)).exit_code == 0  # warnings
    code, report = lint_json(root, "--strict")
    assert code == 1
    found = [f for f in report["findings"] if f["code"] == "atomic-format"]
    assert [(f["file"], f["line"], f["severity"]) for f in found] == [
        ("git/git-worktree.md", 1, "warning"),
        ("git/git-worktree.md", 3, "warning"),
        ("git/git-worktree.md", 7, "warning"),
    ]
    assert [f["message"].split(" ", 3)[:3] for f in found] == [
        ["a", "title", "line"],
        ["a", "date/status", "line"],
        ["a", "parent", "pointer"],
    ]
    assert "'# Worktree cleanup'" in found[0]["message"]
    # the other file is atomic, and only the planted one is reported
    assert {f["file"] for f in report["findings"]} == {"git/git-worktree.md"}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nid: w1\n---\n# Worktrees\n\nPrune them.\n", 4),  # a title below frontmatter
        ("Prune them.\n\nCreated: 2026-01-04\n", 3),
        ("Prune them.\n\n- **Last Updated:** 2026-01-04\n", 3),
        ("Prune them.\n\n> Back to [skills-git-index](../skills-git-index.md)\n", 3),
        ("Prune them.\n\n## Related\n\n- [memory-index](../memory-index.md)\n", 5),
    ],
)
def test_each_form_of_the_atomic_rule(tmp_path: Path, text: str, line: int) -> None:
    root = small_folder(tmp_path)
    (root / "git" / "git-worktree.md").write_text(text)
    _, report = lint_json(root)
    assert findings(report, "atomic-format") == [("git/git-worktree.md", line)]


def test_what_the_atomic_rule_leaves_alone(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "git" / "git-worktree.md").write_text(
        "---\ntitle: Worktrees\ncreated: 2026-01-04\n---\n"  # frontmatter is metadata, not lines
        "## Section\n\n| Column | Column |\n|---|---|\n| Data | Data |\n\n"
        "**Key insight**: one sentence. The status of a worktree is in `git worktree list`.\n\n"
        "```bash\n# not a title\nStatus: not a status line\n```\n\n"
        "## Related\n\n- [git-rebase](git-rebase.md)\n"
    )
    (root / "git" / "git-rebase.md").write_text(
        "```bash\n# a comment in code is no title\ngit rebase --abort\n```\n"
    )
    _, report = lint_json(root)
    assert report["findings"] == []


def test_rows_must_point_at_domain_named_files(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "git" / "banana-unrelated-name.md").write_text("Bananas, unrelated to git.\n")
    line = append(
        root / "skills-git-index.md",
        "| banana peel yellow fruit potassium bunch ripe tropical plantain smoothie "
        "| [git/banana-unrelated-name](git/banana-unrelated-name.md) |",
    )
    (root / "skills-ci-infrastructure-index.md").write_text(
        "| Keywords | File |\n|---|---|\n"
        "| cache lockfile hash restore key runner matrix artifact upload retention "
        "| [git/ci-cache](git/ci-cache.md) |\n"
    )
    (root / "git" / "ci-cache.md").write_text("Key the cache on the lockfile hash.\n")
    append(
        root / "memory-index.md",
        "|ci cache lockfile: [skills-ci-infrastructure-index](skills-ci-infrastructure-index.md)",
    )
    code, report = lint_json(root)
    assert code == 0  # a warning
    assert findings(report, "domain-naming") == [("skills-git-index.md", line)]
    (message,) = [f["message"] for f in report["findings"] if f["code"] == "domain-naming"]
    assert "git/banana-unrelated-name.md" in message and "git-..." in message
    assert lint_json(root, "--strict")[0] == 1
    assert findings(lint_json(root, "--ignore", "domain-naming")[1], "domain-naming") == []


def test_skill_rows_need_10_to_15_keywords_and_routing_rows_are_exempt(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    words = [f"w{i}" for i in range(30)]
    (root / "git" / "git-nine.md").write_text("Nine.\n")
    (root / "git" / "git-sixteen.md").write_text("Sixteen.\n")
    (root / "git" / "git-fifteen.md").write_text("Fifteen.\n")
    index = root / "skills-git-index.md"
    nine = append(index, f"| {' '.join(words[:9])} | [git/git-nine](git/git-nine.md) |")
    sixteen = append(index, f"| {' '.join(words[9:25])} | [git/git-sixteen](git/git-sixteen.md) |")
    append(index, f"| {' '.join(words[15:30])} | [git/git-fifteen](git/git-fifteen.md) |")
    # routing rows with three keywords: memory-index.md, and a domain index row to another index
    (root / "skills-git-more-index.md").write_text(
        "| Keywords | File |\n|---|---|\n"
        "| bisect regression search good bad commit range skip script automate "
        "| [git/git-bisect](git/git-bisect.md) |\n"
    )
    (root / "git" / "git-bisect.md").write_text("Bisect with a script.\n")
    append(index, "| bisect more git | [skills-git-more-index](skills-git-more-index.md) |")
    _, report = lint_json(root)
    assert findings(report, "few-keywords") == [("skills-git-index.md", nine)]
    assert findings(report, "many-keywords") == [("skills-git-index.md", sixteen)]
    assert {f["severity"] for f in report["findings"] if f["code"].endswith("-keywords")} == {"warning"}
    message = next(f["message"] for f in report["findings"] if f["code"] == "many-keywords")
    assert message == "16 keywords; a skill row needs 10 to 15 (ADR-017)"
    # the bounds are the user's: the routing rows stay exempt whatever they are
    _, wide = lint_json(root, "--min-keywords", "2", "--max-keywords", "16")
    assert findings(wide, "few-keywords") == findings(wide, "many-keywords") == []
    _, narrow = lint_json(root, "--min-keywords", "16", "--max-keywords", "16")
    assert ("skills-git-index.md", sixteen) not in findings(narrow, "few-keywords")
    assert len(findings(narrow, "few-keywords")) == 5  # 2 old rows + nine + fifteen + bisect; no routing row


def test_keyword_bounds_and_ignored_rules_are_checked(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    result = CliRunner().invoke(cli, ["lint", str(root), "--min-keywords", "16", "--max-keywords", "15"])
    assert result.exit_code == 2
    assert "--min-keywords 16 is above --max-keywords 15" in result.output
    result = CliRunner().invoke(cli, ["lint", str(root), "--ignore", "atomic-formats"])
    assert result.exit_code == 2 and "--ignore atomic-formats: no such rule" in result.output


@pytest.mark.slow
def test_the_new_rules_warn_on_the_real_corpora_and_block_nothing_more() -> None:
    "docs/measured.md's figures: what ADR-017's format rules find in the folders it was written for."
    expected = {
        "serena-memories": (
            31,
            {"atomic-format": 1302, "domain-naming": 136, "few-keywords": 431, "many-keywords": 16},
        ),
        "serena-memories-flat": (
            902,
            {"atomic-format": 1170, "domain-naming": 6, "few-keywords": 283, "many-keywords": 11},
        ),
    }
    for name, (errors, counts) in expected.items():
        _, report = lint_json(shared(name))
        assert report["errors"] == errors, name  # the same errors as before the rules
        assert {code: report["by_code"].get(code, 0) for code in counts} == counts, name
        assert {f["severity"] for f in report["findings"] if f["code"] in counts} == {"warning"}


# -- keywords ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_keywords_for_an_indexed_file_are_distinctive_and_pass_its_index(nested_copy: Path) -> None:
    before = digest(nested_copy)
    file = nested_copy / "git" / "git-worktree-cleanup.md"
    result = run("keywords", str(file), "--json")
    (proposal,) = json.loads(result.stdout)
    assert 10 <= len(proposal["keywords"]) <= 15
    assert proposal["index"] == "skills-git-index.md" and proposal["unique_share"] >= 0.4
    assert proposal["row"].endswith("| [git/git-worktree-cleanup](git/git-worktree-cleanup.md) |")
    assert proposal["current"] and "worktree" in [k.lower() for k in proposal["current"]]
    # the 40% rule, checked against the index as lint reads it
    folder = scan(nested_copy)
    others = {
        k.casefold()
        for r in folder.indexes["skills-git-index.md"].rows()
        if not any(t[1].endswith("git-worktree-cleanup.md") for t in r.targets)
        for k in r.keywords
    }
    unique = [k for k in proposal["keywords"] if k.casefold() not in others]
    assert len(unique) / len(proposal["keywords"]) >= 0.4
    assert digest(nested_copy) == before  # nothing written


def test_keywords_for_orphans_and_for_all(tmp_path: Path) -> None:
    root = small_folder(tmp_path)
    (root / "git" / "git-orphan.md").write_text(
        "# Submodule sync\n\nSync submodules after a detached checkout.\n"
    )
    result = run("keywords", "--orphans", str(root), "--json")
    proposals = json.loads(result.stdout)
    assert [p["file"] for p in proposals] == ["git/git-orphan.md"]
    assert proposals[0]["index"] == "skills-git-index.md"  # its folder's memories are indexed there
    assert {"submodule", "sync"} <= {k.lower() for k in proposals[0]["keywords"]}
    every = json.loads(run("keywords", "--all", str(root), "--json").stdout)
    assert len(every) == 3
    text = run("keywords", str(root / "git" / "git-orphan.md")).stdout
    assert "| [git/git-orphan](git/git-orphan.md) |" in text


def test_keywords_needs_exactly_one_target(tmp_path: Path) -> None:
    assert run("keywords").exit_code == 2
    root = small_folder(tmp_path)
    assert run("keywords", "--all", str(root), "--orphans", str(root)).exit_code == 2


# -- cost -----------------------------------------------------------------------------------------------------
def test_cost_of_one_memory_adds_up(nested_copy: Path) -> None:
    file = nested_copy / "git" / "git-worktree-cleanup.md"
    data = json.loads(run("cost", "--file", str(file), "--json").stdout)
    tokens = lambda p: (p.stat().st_size + 3) // 4  # noqa: E731
    assert data["file_tokens"] == tokens(file)
    assert data["top_index_tokens"] == tokens(nested_copy / "memory-index.md")
    assert data["domain_index"] == "skills-git-index.md"
    assert data["domain_index_tokens"] == tokens(nested_copy / "skills-git-index.md")
    assert (
        data["tiered_tokens"] == data["top_index_tokens"] + data["domain_index_tokens"] + data["file_tokens"]
    )
    folder = scan(nested_copy)
    members = {
        link.target for link in folder.indexes["skills-git-index.md"].links if link.target in folder.memories
    }
    assert data["domain_files"] == len(members)
    assert data["consolidated_tokens"] == sum(tokens(nested_copy / m) for m in members)
    assert data["savings_cached"] == round(1 - data["tiered_cached_tokens"] / data["consolidated_tokens"], 3)


def test_cost_summary_on_the_flat_corpus_is_near_the_design() -> None:
    data = json.loads(run("cost", "--all", str(shared("serena-memories-flat")), "--json").stdout)
    assert data["memories"] > 200
    assert 0.7 < data["median_savings_cached"] < 0.95  # the design measured 82%
    assert 0.1 < data["median_savings_uncached"] < 0.5  # and 27.6% without caching


def test_cost_of_a_query_and_of_an_orphan(serena_db: Path, tmp_path: Path) -> None:
    result = run("--db", str(serena_db), "cost", "worktree cleanup")
    assert "(the best match for 'worktree cleanup')" in result.stdout and "saved:" in result.stdout
    root = small_folder(tmp_path)
    (root / "git" / "git-orphan.md").write_text("# Orphan\n\nNobody points here.\n")
    text = run("cost", "--file", str(root / "git" / "git-orphan.md")).stdout
    assert "a tiered read cannot reach it" in text


def test_the_adr_k_skill_figures_and_break_even_are_reproduced() -> None:
    "ADR-017 and its analysis: index 98 tokens, mean skill 145, consolidated 1,325 / 1,415."
    from memdex.serena.cost import break_even, skills_tokens

    assert [skills_tokens(98, 145, k) for k in (1, 3, 9)] == [243, 533, 1403]  # the analysis's table
    assert round(1 - skills_tokens(98, 145, 3) / 1415, 2) == 0.62  # "3 skills from domain ... 62%"
    assert round(1 - skills_tokens(98, 145, 1) / 1325, 3) == 0.817  # "81.6%" single skill, cached
    assert (1325 - 98) / 145 == pytest.approx(8.46, abs=0.005)
    assert break_even(1325, 98, 145) == 9  # "Tiered loses to consolidated when needing 9+ skills"
    assert skills_tokens(98, 145, 8) < 1325 <= skills_tokens(98, 145, 9)
    assert break_even(100, 0, 50) == 2  # a tie counts: tiered is no longer cheaper
    assert break_even(100, 500, 50) == 1  # an index dearer than the domain: never cheaper


def copilot_folder(tmp_path: Path) -> Path:
    "The ADR's pilot domain on disk, byte for byte: a 391-byte index and memories of 528, 378, 833 bytes."
    root = tmp_path / "copilot"
    root.mkdir()
    names = ["copilot-platform-priority", "copilot-follow-up-pr", "copilot-pr-review"]
    rows = [f"| {' '.join(f'k{i}{j}' for j in range(10))} | [{n}]({n}.md) |" for i, n in enumerate(names)]
    index = "| Keywords | File |\n|---|---|\n" + "\n".join(rows) + "\n"
    index = index.replace(" k00 ", " " + "k" * (391 - len(index) + 3) + " ", 1)
    (root / "skills-copilot-index.md").write_text(index)
    for name, size in zip(names, (528, 378, 833), strict=True):
        (root / f"{name}.md").write_text("x" * (size - 1) + "\n")
    (root / "memory-index.md").write_text("|copilot: [skills-copilot-index](skills-copilot-index.md)\n")
    assert (root / "skills-copilot-index.md").stat().st_size == 391
    return root


def test_cost_of_k_skills_and_break_even_on_real_files(tmp_path: Path) -> None:
    root = copilot_folder(tmp_path)
    file = root / "copilot-pr-review.md"
    data = json.loads(run("cost", "--file", str(file), "--skills", "2", "--json").stdout)
    index, memories, top = 98, [132, 95, 209], ((root / "memory-index.md").stat().st_size + 3) // 4
    assert data["domain_index_tokens"] == index and data["file_tokens"] == 209
    assert data["consolidated_tokens"] == sum(memories) == 436 and data["domain_files"] == 3
    mean = sum(memories) / 3
    assert data["mean_memory_tokens"] == round(mean, 1)
    assert data["skills"] == {
        "k": 2,
        "tiered_cached_tokens": round(index + 2 * mean),  # 389
        "savings_cached": round(1 - round(index + 2 * mean) / 436, 3),
        "tiered_uncached_tokens": round(top + index + 2 * mean),
        "savings_uncached": round(1 - round(top + index + 2 * mean) / 436, 3),
    }
    assert data["break_even_cached"] == 3  # (436 - 98) / 145.3 = 2.3: the whole domain, rounded up
    text = run("cost", "--file", str(file), "--skills", "2").stdout
    assert "2 of the domain's memories (index + 2 x 145): 389 tokens cached" in text
    assert "break-even: from 3 of its 3 memories" in text
    # more memories than the domain has: a clear error naming the option
    result = CliRunner().invoke(cli, ["cost", "--file", str(file), "--skills", "4"])
    assert result.exit_code == 2
    assert "--skills 4: skills-copilot-index.md lists 3 memories; give 1 to 3." in result.output


def test_k_skills_over_the_real_corpus_is_near_the_adr() -> None:
    data = json.loads(
        run("cost", "--all", str(shared("serena-memories-flat")), "--skills", "3", "--json").stdout
    )
    skills = data["skills"]
    assert skills["k"] == 3 and skills["domains"] + skills["domains_smaller"] == data["domains"] == 35
    assert 0.45 < skills["median_savings_cached"] < 0.75  # the ADR: 62%
    assert data["median_break_even_cached"] <= data["median_domain_files"]
    text = run("cost", "--all", str(shared("serena-memories-flat")), "--skills", "3").stdout
    assert "3 memories of a domain (34 domains have that many, 1 fewer)" in text


# -- status and re-reading -------------------------------------------------------------------------------------
def test_status_says_how_many_files_no_index_reaches(serena_db: Path) -> None:
    data = json.loads(run("--db", str(serena_db), "status", "--json").stdout)
    (root,) = data["roots"]
    assert root["orphans"] == 376


def test_a_root_read_by_older_parsers_is_read_again(tmp_path: Path, db_path: Path) -> None:
    root = small_folder(tmp_path)
    conn = db.connect(db_path)
    assert index_paths(conn, [root]).added == 4
    assert index_paths(conn, [root]).unchanged == 4
    conn.execute("UPDATE roots SET ingest_version = 1")
    conn.commit()
    again = index_paths(conn, [root])
    assert again.updated == 4 and again.unchanged == 0
    assert index_paths(conn, [root]).unchanged == 4
    conn.close()


def test_serena_rows_after_a_blank_line_become_topics(sample: sqlite3.Connection, sample_copy: Path) -> None:
    index = sample_copy / "serena" / "skills-git-index.md"
    index.write_text(
        index.read_text()
        + "\n| zanzibar quokka | [git/git-rebase-conflicts](git/git-rebase-conflicts.md) |\n"
    )
    index_paths(sample, [sample_copy / "serena"])
    topics = {
        r[0]
        for r in sample.execute(
            "SELECT topic FROM topics t JOIN documents d ON d.id = t.document_id WHERE d.key = 'git/git-rebase-conflicts'"
        )
    }
    assert {"zanzibar", "quokka"} <= topics
