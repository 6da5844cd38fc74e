#!/usr/bin/env python3
"""Build the model memdex ships (memdex/models/all-MiniLM-L6-v2-int8/) from a model folder.

Packs all-MiniLM-L6-v2's weights at int8, as memdex's encoder runs them, with its configuration,
tokenizer, vocabulary, NOTICE and LICENSE (memdex.query.meaning.packaged; docs/model.md). The
built files are committed: `pip install .` of a fresh clone must find them. Run it again when
the packing changes (packaged.FORMAT), and commit what changed.

Example:

    python scripts/package_model.py                       # ../shared/data/models/all-MiniLM-L6-v2
    python scripts/package_model.py --source ~/models/all-MiniLM-L6-v2 --json
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from memdex.query.meaning.model import PACKAGED_MODEL, packaged_path
from memdex.query.meaning.packaged import build

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "data" / "models" / "all-MiniLM-L6-v2"
APACHE = Path("/usr/share/common-licenses/Apache-2.0")  # the license's text, as Debian ships it


@click.command()
@click.option(
    "--source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=SOURCE,
    show_default=True,
    help="The full model's folder (model.safetensors, tokenizer.json, configs).",
)
@click.option(
    "--destination",
    type=click.Path(file_okay=False, path_type=Path),
    default=REPO / "memdex" / "models" / PACKAGED_MODEL,
    show_default=True,
    help="Where to write the packed model (its files there are replaced).",
)
@click.option(
    "--license",
    "license_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=APACHE if APACHE.is_file() else None,
    help=f"The model's license text, copied as LICENSE (default: {APACHE} when present).",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was built as JSON.")
def main(source: Path, destination: Path, license_file: Path | None, as_json: bool) -> None:
    """Pack a model folder for the package; print its files and sizes.

    Example: python scripts/package_model.py --json
    """
    if license_file is None:
        raise click.UsageError("No license text found: give --license FILE (the model's license).")
    report = build(source, destination, license_file)
    if as_json:
        click.echo(json.dumps({**report.__dict__, "total": report.total}, indent=2))
        return
    for name, size in report.files.items():
        click.echo(f"{size:>12,}  {name}")
    click.echo(f"{report.total:>12,}  in {destination}")
    click.echo(f"vectors named {report.name} (the source's at int8: {report.source})")
    if destination.resolve() != packaged_path():
        click.echo(f"(the package reads {packaged_path()})")


if __name__ == "__main__":
    main()
