"""The docs are tested like code: they must match what the program does."""

import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from memdex.doors.cli import cli
from memdex.models import Hit

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
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


def test_readme_documents_every_json_result_field() -> None:
    table = README.split("### JSON results", 1)[1]
    documented = set(re.findall(r"`([a-z_]+)`", table.split("\n\n", 3)[2]))
    fields = set(Hit(**{f: None for f in Hit.__dataclass_fields__}).to_dict())
    assert fields <= documented, fields - documented


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
