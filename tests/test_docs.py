"""The documentation says what the code does: the log format's fields, the options its examples
use, and what its examples show."""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import ROOT, RUN42

from replay.cli import cli
from replay.cli._main import load_commands
from replay.log._events import EVENT_TYPES

load_commands()
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COMMON_FIELDS = {"type", "ts", "thread", "id"}
"""The fields docs/log-format.md lists once, under "Common fields"."""


def _event_rows() -> dict[str, str]:
    """`type` → the fields cell of its row in docs/log-format.md's table of events."""
    text = (ROOT / "docs" / "log-format.md").read_text(encoding="utf-8")
    table = text.split("## Events", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[re.match(r"`(\w+)`", cells[0]).group(1)] = cells[1]
    return rows


@pytest.mark.parametrize("kind", sorted(EVENT_TYPES))
def test_the_log_format_lists_every_field_of_each_event(kind: str) -> None:
    cell = _event_rows()[kind]
    listed = set(re.findall(r"`(\w+)", cell))
    missing = set(EVENT_TYPES[kind].model_fields) - COMMON_FIELDS - listed
    assert not missing, f"docs/log-format.md: `{kind}` lacks {sorted(missing)}"


def _examples() -> list[tuple[str, list[str]]]:
    """Every `replay ...` command line of the README, docs/*.md and every --help, as argv."""
    from click.testing import CliRunner

    texts = [(p.name, p.read_text(encoding="utf-8")) for p in DOCS]
    for name in ["", *sorted(cli.commands)]:
        args = [name, "--help"] if name else ["--help"]
        texts.append((f"replay {name} --help", CliRunner().invoke(cli, args).output))
    found = []
    for where, text in texts:
        text = re.sub(r"\\\n\s*", " ", text)  # a line continued with a backslash
        lines = re.findall(r"`(replay [^`]+)`", text)
        lines += re.findall(r"^\s*(?:\$ |[A-Z_]+=\S+ )?(replay [^\n#]*)", text, flags=re.M)
        for line in lines:
            try:
                found.append((where, shlex.split(line)[1:]))
            except ValueError:  # (an unclosed quote: a line wrapped in prose)
                continue
    return found


def test_doc_examples_use_options_their_command_has() -> None:
    examples = _examples()
    assert len(examples) > 150  # (the patterns still find them)
    wrong = []
    for where, argv in examples:
        name = argv[0] if argv and argv[0] in cli.commands else "run"
        known = {o for p in cli.commands[name].params for o in (*p.opts, *p.secondary_opts)}
        group = {o for p in cli.params for o in p.opts}  # `replay --version`
        for n, word in enumerate(argv):
            option = word.split("=", 1)[0]
            if n == 0 and option in group:
                continue
            if option.startswith("-") and option != "-" and option not in known | {"-h"}:
                wrong.append(f"{where}: replay {name} has no {option}")
    assert not wrong, "\n".join(wrong)


def _readme_usage() -> list[list[str]]:
    """The command lines of the README's Usage block that run on the sample log, as argv."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Usage", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #", 1)[0].strip() for line in block.splitlines()]
    return [shlex.split(line)[1:] for line in lines if "logs/run42.jsonl" in line]


def test_readme_ttl_examples_show_the_ttl_at_work(invoke, monkeypatch) -> None:
    """An example of --ttl is one where it changes something: not ignored with a note, as on the
    sample log's own provider (Gemini has no 5m/1h choice)."""
    monkeypatch.chdir(ROOT)
    examples = [argv for argv in _readme_usage() if "--ttl" in argv]
    assert examples
    for argv in examples:
        result = invoke(*argv)  # (not --quiet: it drops the notes)
        assert result.exit_code == 0, result.stderr
        assert "was ignored" not in result.stderr, f"replay {shlex.join(argv)}: {result.stderr}"


def test_the_plugin_file_example_of_the_strategies_doc_loads_as_written(
    tmp_path, clean_registry, invoke
) -> None:
    """docs/strategies.md's plug-in file, copied as it stands (its body `...` aside), loads with
    the name, cache class, rule, default and bounds its comments promise."""
    import json

    text = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    block = text.split("**From a file**", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "my_strategy.py"
    path.write_text(block, encoding="utf-8")

    listed = invoke("strategies", "--strategy-file", path, "--format", "json")
    assert listed.exit_code == 0, listed.stderr
    row = next(r for r in json.loads(listed.stdout) if r["name"] == "keep-edges")
    assert (row["cache_class"], row["defaults"]) == ("churn", {"n": 20})
    assert row["rule"] == "Keep the first message and the last N items."
    refused = invoke("run", RUN42, "-s", "keep-edges", "--strategy-file", path,
                     "--set", "keep-edges.n=0", "-q")
    assert refused.exit_code == 2 and "keep-edges.n must be ≥ 1" in refused.stderr


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _names(text: str) -> list[str]:
    """Field names in backticks, in order, comma-separated lists split (`a, b` → a, b)."""
    spans = re.findall(r"`([^`]+)`", text)
    words = (w.strip() for span in spans for w in span.split(","))
    return [w for w in words if re.fullmatch(r"[a-z][a-z0-9_]*", w)]


def _in_order(fields: list[str], documented: list[str]) -> bool:
    """Whether `documented` names every field in this order (prose may name one earlier too)."""
    rest = iter(documented)
    return all(field in rest for field in fields)


def test_the_documented_field_lists_are_the_outputs_fields(invoke, tmp_path) -> None:
    """README's "Output columns" (summary, per request, break-even, evidence, whatif's JSON) and
    docs/batch.md's dataset columns name every field the outputs have, in their order, and no
    field they lack."""
    import json

    from replay._api import BREAKEVEN_TURN_COLUMNS
    from replay.batch import REQUEST_META, SESSION_META, SESSION_PRICING
    from replay.engine import SUMMARY_COLUMNS, TURN_COLUMNS
    from replay.engine._results import EVIDENCE_COLUMNS

    out = tmp_path / "be.json"
    done = invoke("breakeven", RUN42, "-s", "age-truncate-500-keep-3", "-o", out, "-q")
    assert done.exit_code == 0, done.stderr
    breakeven = list(json.loads(out.read_text())["breakeven"][0])
    out = tmp_path / "whatif.json"
    done = invoke("whatif", RUN42, "--at", "8", "--prune", "older-than:3", "-o", out, "-q")
    assert done.exit_code == 0, done.stderr
    whatif = list(json.loads(out.read_text()))

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    batch = (ROOT / "docs" / "batch.md").read_text(encoding="utf-8")
    summary = _between(readme, "Summary rows", "A strategy whose rules never fired")
    first_cells = "\n".join(line.split("|")[1] for line in summary.splitlines()
                             if line.startswith("| `"))
    sections = {
        "summary": (_names(first_cells), SUMMARY_COLUMNS),
        "per request": (_names(_between(readme, "Per-request rows", "With `--per-turn --b")),
                        TURN_COLUMNS),
        "per request with break-even": (
            _names(_between(readme, "With `--per-turn --breakeven`", "The buckets")),
            BREAKEVEN_TURN_COLUMNS),
        "evidence": (_names(_between(readme, "hidden mention\n(", "—")), EVIDENCE_COLUMNS),
        "break-even": (_names(_between(readme, "Break-even rows", "**Tables")), breakeven),
        "whatif": (_names(_between(readme, "Its JSON has", ".\n")), whatif),
        "batch sessions": (
            _names(_between(batch, "`sessions` columns:", "`requests` columns")),
            SESSION_META + ["strategy"] + SESSION_PRICING),
        "batch requests": (_names(_between(batch, "`requests` columns:", " and the per")),
                           REQUEST_META),
    }
    known = {n for _, fields in sections.values() for n in fields}
    for name, (documented, fields) in sections.items():
        assert _in_order(list(fields), documented), f"{name}: {fields} vs {documented}"
        stale = [n for n in documented if "_" in n and n not in known]
        assert not stale, f"{name}: documented, in no output: {stale}"


def test_the_strategies_json_fields_are_those_docs_strategies_lists(invoke) -> None:
    import json

    text = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    documented = _names(_between(text, "--format json` gives the same list as rows with", "("))
    rows = json.loads(invoke("strategies", "--format", "json").stdout)
    assert documented == list(rows[0])


def test_the_strategies_docs_says_are_not_simulated_are_refused_with_the_reason(invoke) -> None:
    """docs/strategies.md "Not simulated" names research strategies replay leaves out, with why;
    asking for one said only "unknown strategy", as for a typo."""
    text = (ROOT / "docs" / "strategies.md").read_text(encoding="utf-8")
    section = _between(text, "## Not simulated", "## Plug-ins")
    names = re.findall(r"^- `([a-z0-9-]+)`", section, flags=re.M)
    assert len(names) == 3
    for name in names:
        refused = invoke("run", RUN42, "-s", f"baseline,{name}", "-q")
        assert refused.exit_code == 2
        assert f"error: strategy '{name}' is not simulated: " in refused.stderr
