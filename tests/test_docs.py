"""The docs are tested like code: they must match what the program does."""

import os
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.models import Hit

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
SEARCH_PAGE = (REPO / "docs" / "search.md").read_text()
sys.path.insert(0, str(REPO / "scripts"))
import gen_cli_docs  # noqa: E402


def _commands(group: click.Group, prefix: str = "") -> list[tuple[str, click.Command]]:
    out = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # loads lazily registered commands too
        command = group.get_command(ctx, name)
        assert command is not None, f"memdex {prefix}{name} is listed but not defined"
        out.append((f"{prefix}{name}", command))
        if isinstance(command, click.Group):
            out += _commands(command, f"{prefix}{name} ")
    return out


@pytest.mark.parametrize(("name", "command"), _commands(cli))
def test_every_command_has_help_with_a_real_example(name: str, command: click.Command) -> None:
    assert command.help, f"memdex {name} has no help"
    example = command.help.split("Example:", 1)
    assert len(example) == 2, f"memdex {name} --help shows no example"
    assert example[1].strip().startswith("memdex "), example[1]
    assert f"## memdex {name}\n" in (REPO / "docs" / "cli.md").read_text()


def test_cli_reference_is_current() -> None:
    assert (REPO / "docs" / "cli.md").read_text() == gen_cli_docs.render(), (
        "run python scripts/gen_cli_docs.py"
    )


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(python3 -m venv .*?)\n```", README)
    assert len(commands) == 2, "the README opens with exactly two set-up commands"
    assert "memdex demo" in commands[0]
    assert "pytest" in commands[1]
    assert commands[1] in (REPO / ".ci" / "run").read_text()


def test_the_search_page_documents_every_json_result_field() -> None:
    table = SEARCH_PAGE.split("## JSON results", 1)[1]
    documented = set(re.findall(r"`([a-z_]+)`", table.split("\n\n", 3)[2]))
    fields = set(Hit(**{f: None for f in Hit.__dataclass_fields__}).to_dict())
    assert fields <= documented, fields - documented


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted((REPO / "scripts").glob("*.py")), ids=lambda p: p.name)
def test_scripts_have_help(script: Path) -> None:
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Example" in out.stdout or "Commands:" in out.stdout


def test_changelog_has_an_unreleased_section() -> None:
    assert (REPO / "CHANGELOG.md").read_text().startswith("# Changelog\n\n## Unreleased\n")


def test_the_reliability_page_runs_only_commands_that_exist() -> None:
    "Every `python scripts/reliability.py CMD --opt` on docs/reliability.md is a real command and option."
    import reliability

    page = (REPO / "docs" / "reliability.md").read_text()
    used = re.findall(r"python scripts/reliability\.py ([a-z-]+)((?: --[a-z-]+(?: \S+)?)*)", page)
    assert len(used) >= 8
    for name, options in used:
        command = reliability.cli.commands[name]
        known = {o for p in command.params for o in p.opts}
        assert set(re.findall(r"--[a-z-]+", options)) <= known, (name, options)


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize(("name", "command"), _commands(cli))
def test_each_example_is_a_line_of_its_own(name: str, command: click.Command, width: int) -> None:
    "Previously `search --help` ran its two examples together into one wrapped paragraph (#26)."
    out = CliRunner().invoke(cli, [*name.split(), "--help"], terminal_width=width).output
    example = out.split("Example:", 1)[1].split("\nOptions:", 1)[0]
    lines = [line.strip() for line in example.splitlines() if line.strip()]
    assert lines, f"memdex {name} --help shows no example"
    for line in lines:
        alone = re.sub(r"(&&|\|\|?|;)\s+memdex ", "", line)  # a pipeline may run memdex twice
        assert alone.startswith("memdex ") and "memdex " not in alone[len("memdex ") :], line


def _tool_schemas(folder: Path) -> dict[str, set[str]]:
    "The tools' parameters as an MCP client sees them (tools/list over stdio)."
    from .test_mcp import over_stdio

    tools = over_stdio(folder / "none.db", [])["tools"]  # no index needed to list them
    return {name: set(tool.input_schema.get("properties", {})) for name, tool in tools.items()}


@pytest.mark.slow
def test_the_mcp_parameters_documented_are_the_servers_own(tmp_path: Path) -> None:
    """Previously the README listed 10 of search_knowledge_base's 17 parameters (#26); the README
    now names the tools and docs/mcp.md lists their parameters."""
    schemas = _tool_schemas(tmp_path)
    mcp_page = (REPO / "docs" / "mcp.md").read_text()
    bullet = README.split("- **MCP** (", 1)[1].split("\n- **", 1)[0]  # "Other doors"
    for tool, parameters in schemas.items():
        assert f"`{tool}`" in bullet, f"the README's MCP bullet does not name {tool}"
        # docs/mcp.md: the first column of the tool's table
        section = mcp_page.split(f"### `{tool}`", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
        rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
        in_page = {name for cell in rows for name in re.findall(r"`([a-z_]+)`", cell)}
        assert in_page == parameters, (tool, in_page ^ parameters)


# A path of the machine a page was written on: /work/…, /home/…, /tmp/… and the like.
MACHINE_PATH = re.compile(
    r"(?<![\w.~…-])/(?:work|home|Users|tmp|root|private|var/folders|mnt|opt)/[^\s\"'`)]+"
)
PLACEHOLDER_PATHS = ("/home/me/",)  # docs/mcp.md's client config: a user's home, written out
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "docs").rglob("*.json"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_pages_hold_no_path_of_the_machine_they_were_written_on(page: Path) -> None:
    "Previously the README and docs/benchmarks/*.json showed /work/shared/data/serena-memories (#26)."
    found = [m for m in MACHINE_PATH.findall(page.read_text()) if not m.startswith(PLACEHOLDER_PATHS)]
    assert not found, f"{page.name}: write these relative or as …/ (see the README's samples): {found}"


def as_pasted(text: str, prefixes: dict[str, str] | None = None) -> str:
    """Output as the docs paste it: this machine's path prefixes shortened (to ``…/``), and what
    changes from run to run left out: timings, and the dates of documents dated by file time
    (the day of the checkout)."""
    for real, shown in (prefixes or {}).items():
        text = text.replace(real, shown)
    text = re.sub(r"\bin \d+(?:\.\d+)? s\b", "in N s", text)
    return re.sub(r"\d{4}-\d\d-\d\d \(dated by file time\)", "YYYY-MM-DD (dated by file time)", text)


def pasted_block(page: str, first_line: str) -> str:
    "The fenced block of ``page`` that starts with ``first_line``, without its fences."
    m = re.search(r"^```(?:console)?\n(" + re.escape(first_line) + r".*?)\n```$", page, re.S | re.M)
    assert m, f"no sample starting with {first_line!r}"
    return m.group(1)


def run_pasted(block: str, db_path: Path, args: dict[str, str], prefixes: dict[str, str]) -> None:
    """Run each ``$ memdex …`` command of a pasted block on ``db_path`` and compare what it prints
    with what follows it; an output that ends in a line ``…`` is an excerpt, compared up to it."""
    for sample in re.split(r"^\$ ", block, flags=re.M)[1:]:
        command, pasted = sample.split("\n", 1)
        argv = [args.get(a, a) for a in shlex.split(command, comments=True)]
        assert argv[0] == "memdex", command
        result = CliRunner().invoke(cli, ["--db", str(db_path), *argv[1:]], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        printed = as_pasted(result.output, prefixes)
        expected = as_pasted(pasted.rstrip("\n"))
        if expected.endswith("\n…"):
            expected, printed = expected[: -len("\n…")], printed[: len(expected) - len("\n…")]
        else:
            printed = printed.rstrip("\n")
        assert printed == expected, f"paste what `{command}` prints now:\n{printed}"


def test_the_date_listing_is_what_memdex_prints(sample: sqlite3.Connection, db_path: Path) -> None:
    "docs/search.md's 'How dates in queries are read' sample, run on the sample corpus the demo indexes."
    run_pasted(pasted_block(SEARCH_PAGE, "$ memdex search October"), db_path, {}, {})


@pytest.mark.slow
def test_the_serena_sample_is_what_memdex_prints(tmp_path: Path) -> None:
    """docs/serena.md's sample on the shared Serena corpus (the README's, before it moved).
    Previously it showed this machine's paths and no date column (#26); paths are pasted as …/."""
    from .conftest import SHARED_DATA, shared

    corpus = shared("serena-memories")
    page = (REPO / "docs" / "serena.md").read_text()
    block = pasted_block(page, "$ memdex index ../shared/data/serena-memories")
    prefixes = {str(SHARED_DATA.resolve()): "…/shared/data"}
    run_pasted(block, tmp_path / "serena.db", {"../shared/data/serena-memories": str(corpus)}, prefixes)


@pytest.mark.slow
def test_the_readme_demo_excerpt_is_what_the_demo_prints(sample_copy: Path) -> None:
    "Previously the excerpt lacked the date column and its paths began with `.../` (#26)."
    from memdex.doors.demo import run_demo

    lines: list[str] = []
    run_demo(lines.append, corpus=sample_copy, program="memdex")
    printed = as_pasted("\n".join(lines), {str(sample_copy): "…/memdex/sample-corpus"})
    pasted = pasted_block(README, "$ memdex search 'Chatty'")
    assert as_pasted(pasted) in printed, f"paste this part of what `memdex demo` prints now:\n{printed}"


@pytest.mark.slow
def test_the_readme_library_example_runs_as_pasted(sample_copy: Path, tmp_path: Path, minilm: Path) -> None:
    """The "As a library" block, run as a script of its own on the sample corpus with the
    shared model: it prints a hit and an answer, embeds, and the process exits on its own
    (previously it filtered on a tag the sample does not hold and stopped at a NameError)."""
    m = re.search(r"### As a library\n.*?```python\n(.*?)\n```", README, re.S)
    assert m, "the README has an 'As a library' example"
    script = m.group(1).replace('"/path/to/memories"', repr(str(sample_copy)))
    assert script != m.group(1), "the example indexes /path/to/memories"
    env = {**os.environ, "MEMDEX_EMBED_MODEL": str(minilm)}
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert "Rotate the deploy keys" in run.stdout
    assert "CI: Cache Keys" in run.stdout  # the answer's best source
    assert (tmp_path / "memdex.db").exists()


def test_the_readme_is_a_page_a_newcomer_reads() -> None:
    "Previously the README was 1,031 lines; what is not for a first read lives in docs/ (#38)."
    assert len(README.splitlines()) <= 320, "move the detail into a page of docs/ and link it"


def test_the_readme_shows_no_command_only_this_repositorys_developers_can_run() -> None:
    """Previously its meaning quick-start embedded with `--model ../shared/data/models/…`, a
    folder only this repository's developers have (#38); its commands are a user's."""
    blocks = re.findall(r"^```(?:bash|console)?\n(.*?)^```$", README, re.S | re.M)
    assert blocks
    assert not [b for b in blocks if "../shared" in b and "pytest" not in b]


def _slug(heading: str) -> str:
    "GitHub's anchor for a heading: lower case, code marks and punctuation dropped, spaces as hyphens."
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _outside_fences(text: str) -> str:
    return re.sub(r"^(```|~~~).*?^\1[ \t]*$", "", text, flags=re.S | re.M)


def _outside_code(text: str) -> str:
    "The page without its fenced blocks and code spans (a link written in code is not one)."
    return re.sub(r"`[^`\n]*`", "", _outside_fences(text))


def _anchors(page: Path) -> set[str]:
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+?)#*$", _outside_fences(page.read_text()), re.M):
        slug, n = _slug(heading), 1
        while slug in anchors:  # a repeated heading gets -1, -2...
            slug, n = f"{_slug(heading)}-{n}", n + 1
        anchors.add(slug)
    return anchors


LINKED = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_points_at_a_file_and_heading_that_exist(page: Path) -> None:
    "The README's detail moved into docs/ (#38): a link to a moved section must follow it."
    links = re.findall(r"\]\(([^)\s]+)\)", _outside_code(page.read_text()))
    broken = []
    for link in links:
        if re.match(r"[a-z]+:", link):  # https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        if not target.exists():
            broken.append(f"{link}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
            broken.append(f"{link}: no heading #{anchor} in {target.name}")
    assert not broken, broken


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(REPO)))
def test_every_code_fence_is_closed(page: Path) -> None:
    "A fence left open when text moves between pages swallows the rest of the page."
    fences = re.findall(r"^ *```", page.read_text(), re.M)
    assert len(fences) % 2 == 0, f"{page.name}: {len(fences)} fence lines"
