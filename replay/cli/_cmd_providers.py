"""`replay providers`: the cache rules in force at a date, with their source and date."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import click

from replay.cli._main import FilePath, cli, output_options, user_errors


@cli.command("providers")
@click.option(
    "--at",
    "at",
    metavar="YYYY-MM-DD",
    help="Show the rules in force on this date (default: today, UTC).",
)
@click.option(
    "--provider",
    help="Only this provider (id or alias, e.g. anthropic, aws, x-ai), and the providers whose "
    "rules have a variant for it (aws: anthropic, variant bedrock).",
)
@click.option(
    "--model",
    help="Resolve every rule for this model at the date (the provider is guessed if not given).",
)
@click.option(
    "--cache-rules",
    type=FilePath(exists=True, dir_okay=False, path_type=Path),
    help="Layer your own rule file over the built-in ones (schema: docs/cache-rules.md).",
)
@click.option("--schema", is_flag=True, help="Print the JSON Schema of a rule file and exit.")
@output_options(("table", "json"))
@user_errors
def providers_command(
    at: str | None,
    provider: str | None,
    model: str | None,
    cache_rules: Path | None,
    schema: bool,
    fmt: str,
    output: Path | None,
    quiet: bool,
) -> None:
    """List providers, the models they cover and the prompt-cache rules in force at a date,
    each with its source and the date it took effect (`?` = marked uncertain in the research:
    an assumption you can override).

    \b
    Example:
      replay providers
      replay providers --at 2026-03-01 --provider openai
      replay providers --provider anthropic --model claude-sonnet-4-5 --format json
      replay providers --schema > cache-rules.schema.json
    """
    from replay import report
    from replay._errors import ReplayError
    from replay.cache import json_schema_text, rules_in_force

    if schema:
        # The schema is JSON: a `--format table` given (not the default) would be ignored.
        table_given = click.get_current_context().get_parameter_source("fmt") not in (
            None, click.core.ParameterSource.DEFAULT) and fmt == "table"
        given = (("--at", at), ("--provider", provider), ("--model", model),
                 ("--cache-rules", cache_rules), ("--format table", table_given or None))
        ignored = [flag for flag, value in given if value is not None]
        if ignored:
            raise ReplayError(f"--schema prints the rule files' JSON schema: {', '.join(ignored)} "
                              "would change nothing")
        report.write_output(json_schema_text(), output)
        return
    try:
        day = date.fromisoformat(at) if at is not None else datetime.now(UTC).date()
    except ValueError:
        raise ReplayError(f"--at {at!r}: expected a date as YYYY-MM-DD") from None
    document = rules_in_force(day, provider, model, cache_rules)
    if fmt == "json":
        report.write_output(json.dumps(document, indent=2, ensure_ascii=False) + "\n", output)
        return
    _print_tables(document, output)


def _print_tables(document: dict[str, Any], output: Path | None) -> None:
    from rich.console import Group
    from rich.text import Text

    from replay import report

    parts: list[Any] = []
    noted: set[str] = set()  # one note for all the tables, not one under each
    at = document["at"]
    for p in document["providers"]:
        head = Text()
        head.append(p["provider"], style="bold")
        if p["aliases"]:
            head.append(f" (also: {', '.join(p['aliases'])})")
        head.append(f" · reviewed {p['reviewed']}\n", style="dim")
        head.append(p["description"] + "\n")
        if p["models"]:
            head.append("models: " + ", ".join(p["models"]) + "\n", style="dim")
        for v in p["variants"]:
            target = f"provider {v['provider']}, models {v.get('models', 'all')}" if v.get(
                "provider") else f"when {v['when']}"
            head.append(f"variant {v['name']} ({target}): {v.get('description', '')}\n",
                        style="dim")
        for route in p["passthrough"]:
            head.append(f"passthrough {route['models']} → {route['to']}\n", style="dim")
        parts.append(head)
        if p["rules"]:
            parts.append(_rules_table(p["rules"], f"{p['provider']}: rules in force on {at}",
                                      noted=noted))
        else:  # a date before every rule: say it, not nothing
            head.append(f"no rule in force on {at}: every rule of this provider is later\n",
                        style="dim")
    resolved = document.get("resolved")
    if resolved:
        title = (f"{resolved['model']} via {resolved['route']} (rules model "
                 f"{resolved['rules_model']}) on {at}")
        parts.append(_rules_table(resolved["rules"], title, resolved=True, noted=noted))
        if not resolved["covered"]:
            parts.append(Text(
                f"note: {resolved['rules_model']} matches none of the model families of "
                f"{resolved['route']}'s rules ({', '.join(resolved['model_patterns'])}): those "
                "are its general rows; is the model served there? (`replay providers --model "
                "M` guesses its provider)"
            ))
    report.print_table(Group(*parts), output, width=200)


def _rules_table(
    rows: list[dict[str, Any]], title: str, resolved: bool = False, noted: set[str] | None = None
):
    from rich.table import Table

    from replay.report._fit import Fitted

    table = Table(title=title, title_justify="left")
    columns = ["rule", "applies to" if resolved else "models", "value", "since", "source"]
    if not resolved:
        columns.insert(2, "variant")
    for col in columns:
        table.add_column(col, overflow="fold")
    for r in rows:
        value = json.dumps(r["value"]) if not isinstance(r["value"], str) else r["value"]
        if r["uncertain"]:
            value += " ?"
        source = r["source"] + (f" — {r['note']}" if r.get("note") else "")
        cells = [r["rule"]]
        if resolved:
            cells.append(r["applies_to"])
        else:
            cells += [r["models"] or "all", r["variant"] or ""]
        cells += [value, r["since"], source]
        table.add_row(*cells)
    if not rows:  # a date before every rule (`--at 1990-01-01`): say it, not an empty table
        table.caption = "no rule in force on that date: every rule of this provider is later"
    # Names, model patterns and sources may fold on a narrow terminal; a value or a date not.
    names = {"rule": 12, "models": 12, "applies to": 12, "variant": 8, "source": 20}
    return Fitted(table, hide=("source",), fold=names, noted=noted)
