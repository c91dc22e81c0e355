"""`replay providers`: the cache rules in force at a date, with their source and date."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import click

from replay.cli._main import cli, output_options, user_errors


def _rule_row(r: Any) -> dict[str, Any]:
    return {
        "rule": r.rule,
        "models": r.models,
        "variant": r.variant,
        "value": r.value,
        "since": r.since.isoformat(),
        "source": r.source,
        "uncertain": r.uncertain,
        "note": r.note,
    }


def _provider_doc(layers: tuple, at: date) -> dict[str, Any]:
    from replay.cache import rows_in_force

    base = layers[-1]
    rows: list[dict[str, Any]] = []
    for layer in layers:
        origin = "built-in" if layer is base else "user file"
        rows += [{**_rule_row(r), "origin": origin} for r in rows_in_force(layer, at)]
    return {
        "provider": base.provider,
        "aliases": base.aliases,
        "description": base.description,
        "reviewed": base.reviewed.isoformat(),
        "models": base.models,
        "variants": [v.model_dump(mode="json", exclude_none=True) for v in base.variants],
        "passthrough": [p.model_dump(mode="json", exclude_none=True) for p in base.passthrough],
        "rules": rows,
    }


def _resolved(router: Any, provider: str, model: str, at: date) -> dict[str, Any]:
    """Every rule's value for one model at `at`, as the simulator will read it."""
    from replay.cache._rules import _MISSING

    route = router.route(provider, model)
    names = sorted({r.rule for layer in route.layers for r in layer.rules})
    modes = [v.name for f in route.layers for v in f.variants if v.when != "provider"]
    rows = []
    for variant in [route.variant, *modes]:
        book = router.book(route, variant)
        for name in names:
            r = book.row(name, route.rules_model, at)
            if r is None or (variant != route.variant and r.variant != variant):
                continue
            forced = book.override(name)
            row = {**_rule_row(r), "applies_to": variant or "default"}
            if forced is not _MISSING:
                row.update(value=forced, source="rule override", uncertain=False)
            rows.append(row)
    return {
        "provider": provider,
        "model": model,
        "route": route.label,
        "rules_model": route.rules_model,
        "rules": rows,
    }


@cli.command("providers")
@click.option(
    "--at",
    "at",
    metavar="YYYY-MM-DD",
    help="Show the rules in force on this date (default: today, UTC).",
)
@click.option("--provider", help="Only this provider (id or alias, e.g. anthropic, aws, x-ai).")
@click.option(
    "--model",
    help="Resolve every rule for this model at the date (the provider is guessed if not given).",
)
@click.option(
    "--cache-rules",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
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
    from replay.cache import CacheRouter, json_schema_text, load_rules_file

    if schema:
        report.write_output(json_schema_text(), output)
        return
    try:
        day = date.fromisoformat(at) if at else datetime.now(UTC).date()
    except ValueError:
        raise ReplayError(f"--at {at!r}: expected a date as YYYY-MM-DD") from None
    router = CacheRouter(load_rules_file(cache_rules) if cache_rules else None)
    files = router._files
    if model is not None and provider is None:
        from replay.prices import provider_for_model

        # Only the provider the model resolves to, not every provider's rules before its own.
        provider = provider_for_model(model)
    if provider is not None:
        layers = router._file(provider.strip().lower())
        if layers is None:
            try:
                route = router.route(provider, model or "")
            except ReplayError:
                raise ReplayError(
                    f"--provider {provider!r}: no cache rules; known: "
                    + ", ".join(router.providers())
                ) from None
            layers = route.layers
        files = [layers]
    document: dict[str, Any] = {
        "at": day.isoformat(),
        "providers": [_provider_doc(layers, day) for layers in files],
    }
    if model is not None and provider is not None:
        document["resolved"] = _resolved(router, provider, model, day)

    if fmt == "json":
        report.write_output(json.dumps(document, indent=2, ensure_ascii=False) + "\n", output)
        return
    _print_tables(document, output)


def _print_tables(document: dict[str, Any], output: Path | None) -> None:
    from rich.console import Console, Group
    from rich.text import Text

    from replay import report

    parts: list[Any] = []
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
            parts.append(_rules_table(p["rules"], f"{p['provider']}: rules in force on {at}"))
    resolved = document.get("resolved")
    if resolved:
        title = (f"{resolved['model']} via {resolved['route']} (rules model "
                 f"{resolved['rules_model']}) on {at}")
        parts.append(_rules_table(resolved["rules"], title, resolved=True))
    if output is None:
        con = report.console()
        for part in parts:
            con.print(part)
        return
    buffer = Console(record=True, width=200, file=open("/dev/null", "w"))  # noqa: SIM115
    buffer.print(Group(*parts))
    report.write_output(buffer.export_text(), output)


def _rules_table(rows: list[dict[str, Any]], title: str, resolved: bool = False):
    from rich.table import Table

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
    return table
