"""`replay strategies`, and the strategy options other commands share (`--set`,
`--strategy-file`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from replay._printable import printable_json
from replay.cli._main import FilePath, cli, output_options, user_errors


def strategy_options(fn: Callable) -> Callable:
    """`--set FAMILY.PARAM=VALUE` and `--strategy-file FILE` (both repeatable)."""
    fn = click.option(
        "--strategy-file",
        "strategy_files",
        multiple=True,
        type=FilePath(dir_okay=False, path_type=Path),
        help="Load plug-in strategies from a Python file (repeatable); run them by name, or all "
        "with `--strategies plugins` / `all,plugins`.",
    )(fn)
    fn = click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="FAMILY.PARAM=VALUE",
        help="Override a strategy parameter for every name of that family (repeatable), e.g. "
        "--set opencode-prune.protect=30k.",
    )(fn)
    return fn


def parse_sets(sets: Sequence[str]) -> dict[str, dict[str, str]]:
    """`family.param=value` strings → {family: {param: value}} (values parsed later, by type)."""
    from replay._errors import ReplayError

    out: dict[str, dict[str, str]] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        family, dot, param = key.strip().rpartition(".")
        if not sep or not dot or not family or not param:
            raise ReplayError(
                f"--set {item!r}: expected FAMILY.PARAM=VALUE, e.g. pi-compact.keep=30k"
            )
        earlier = out.setdefault(family, {}).get(param)
        if earlier is not None and earlier != value.strip():
            # Which one would win is no answer: say it, as a repeated --price does.
            raise ReplayError(
                f"--set {family}.{param} is given twice ({earlier!r} and {value.strip()!r}); "
                "give it once"
            )
        out[family][param] = value.strip()
    return out


def _unused_sets(chosen: Sequence[Any], sets: dict[str, dict[str, str]]) -> None:
    """A `--set` for a family no chosen strategy belongs to would change nothing: an error that
    says so, not a result the user believes was made with it."""
    from replay._errors import ReplayError

    run = {named.spec.family for named in chosen}
    for family, params in sets.items():
        if family not in run:
            param, value = next(iter(params.items()))
            raise ReplayError(
                f"--set {family}.{param}={value}: no strategy of family {family!r} is run "
                f"(--strategies names {', '.join(n.name for n in chosen)}); add one of its "
                "strategies to --strategies (`replay strategies` lists them)"
            )


def resolve_strategies(
    strategies: str, sets: Sequence[str] = (), strategy_files: Sequence[Path] = ()
) -> list[Any]:
    """Load plug-in files, then build the named strategies with the `--set` overrides."""
    from replay.strategies import resolve
    from replay.strategies._plugins import load_strategy_file

    for path in strategy_files:
        load_strategy_file(path)
    overrides = parse_sets(sets)
    chosen = resolve(strategies, overrides)
    _unused_sets(chosen, overrides)
    return chosen


def strategy_rows() -> list[dict[str, Any]]:
    """One row per name `all` / `plugins` run (families without canonical names: the family).

    `defaults` are the parameters that name runs with (`compact-at-12000-freeform` has
    `style=freeform`, not its family's first default); unset optional ones are left out. `api`
    names the provider API of a server-side mechanism (`anthropic`, `openai`), else None."""
    from replay.strategies import parse_name, registered

    rows = []
    for spec in registered():
        for name in spec.canonical or (spec.family,):
            params = parse_name(name).params if spec.canonical else spec.parameters()
            rows.append(
                {
                    "name": name,
                    "family": spec.family,
                    "cache_class": spec.cache_class,
                    "defaults": {
                        k: list(v) if isinstance(v, tuple) else v
                        for k, v in params.items()
                        if v is not None
                    },
                    "rule": spec.rule,
                    "source": spec.source,
                    "api": spec.api or None,
                }
            )
    return rows


def format_params(params: dict[str, Any]) -> str:
    """`k=v, k=v` (lists joined with `+`, as they are written in names and `--set`)."""
    return ", ".join(
        f"{k}={'+'.join(map(str, v)) if isinstance(v, list) else v}" for k, v in params.items()
    )


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as the Markdown table of docs/strategies.md (`--format markdown`)."""
    lines = ["| name | cache class | defaults | rule | source |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [f"`{r['name']}`", r["cache_class"], format_params(r["defaults"]) or "—"]
        cells += [r["rule"], r["source"]]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"


@cli.command("strategies")
@click.option(
    "--strategy-file",
    "strategy_files",
    multiple=True,
    type=FilePath(dir_okay=False, path_type=Path),
    help="Also list the plug-in strategies of this Python file (repeatable).",
)
@output_options(("table", "json", "markdown"))
@user_errors
def strategies_command(
    strategy_files: tuple[Path, ...], fmt: str, output: Path | None, quiet: bool
) -> None:
    """List every strategy name with its cache class, defaults, rule and source.

    `--strategies all` runs the built-in names; installed plug-ins (entry-point group
    `replay.strategies`) and `--strategy-file` ones run with `--strategies plugins`.
    Parameters are set in the name or with `--set FAMILY.PARAM=VALUE` (on `run`, `breakeven`,
    `report` and `plot`); the defaults shown are each name's own. `--format markdown` prints
    the table of docs/strategies.md.

    \b
    Example:
      replay strategies --format json
      replay strategies --strategy-file my_strategy.py
    """
    from rich.table import Table

    from replay import report
    from replay.report._fit import Fitted
    from replay.strategies._plugins import load_strategy_file

    for path in strategy_files:
        load_strategy_file(path)
    rows = strategy_rows()
    if fmt == "json":
        text = json.dumps(rows, indent=2, default=str, ensure_ascii=False)
        report.write_output(printable_json(text) + "\n", output)
        return
    if fmt == "markdown":
        report.write_output(markdown_table(rows), output)
        return
    table = Table(
        title="strategies (`all` runs the built-ins; `plugins` the plug-ins)", title_justify="left"
    )
    for col in ("name", "family", "cache class", "defaults", "rule", "source"):
        table.add_column(col)
    for r in rows:
        defaults = format_params(r["defaults"])
        table.add_row(r["name"], r["family"], r["cache_class"], defaults, r["rule"], r["source"])
    # A narrow terminal drops the family first (a name says it) and keeps name, defaults, rule.
    fitted = Fitted(table, hide=("family", "source", "cache class"),
                    fold={"name": 24, "family": 12, "cache class": 12},
                    wrap={"rule": 24, "source": 16})
    report.print_table(fitted, output)
