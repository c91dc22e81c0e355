"""Strategy parameters: every built-in parameter declares the values it accepts, and any value
outside them — in the name, in `[...]` or with `--set` — is refused in one line (exit code 2)
naming the strategy, the parameter and the range, never a traceback mid-replay."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from conftest import ROOT, RUN42

import replay
from replay._errors import ReplayError
from replay.strategies import parse_name, registered, resolve
from replay.strategies._base import PERCENT, Bounds, StrategySpec, coerce_param, split_names


def _builtin_params() -> list[tuple[StrategySpec, str]]:
    return [
        (spec, param) for spec in registered() if not spec.is_plugin for param in spec.parameters()
    ]


def _name(spec: StrategySpec) -> str:
    return spec.canonical[0] if spec.canonical else spec.family


def _outside(bounds: Bounds) -> list[str]:
    """Values just outside the bounds, plus 0, -1 and a huge number where they are outside."""
    values: set[str] = {"nosuch"}
    if bounds.low is not None:
        values.add(str(bounds.low - 1))
        if bounds.low_open:
            values.add(str(bounds.low))
    if bounds.high is not None:
        values.add(str(bounds.high + 1))
        values.add(str(10**12))
        if bounds.high_open:
            values.add(str(bounds.high))
    if bounds.pct:
        values.update({"0pct", "101pct"})
    if bounds.whole:
        values.update({"1.5", "50.5pct" if bounds.pct else "2.5k"})
    return sorted(v for v in values | {"0", "-1"} if not _accepted(bounds, v))


def _accepted(bounds: Bounds, value: str) -> bool:
    try:
        bounds.check(value)
    except ValueError:
        return False
    return True


def _inside(bounds: Bounds) -> list[str]:
    """The extreme values the bounds accept (a huge one where there is no upper bound)."""
    values = list(bounds.words)
    if bounds.low is not None:
        step = 0.01 if bounds.high is not None and bounds.high <= 1 else 1
        values.append(str(bounds.low + step if bounds.low_open else bounds.low))
    if bounds.high is not None:
        step = 0.01 if bounds.high <= 1 else 1
        values.append(str(bounds.high - step if bounds.high_open else bounds.high))
    elif bounds.low is not None:
        values.append(str(10**12))
    return values


def test_every_builtin_parameter_declares_its_bounds():
    missing = [
        f"{spec.family}.{param}"
        for spec, param in _builtin_params()
        if param not in spec.bounds
        and not isinstance(spec.parameters()[param], bool | tuple | list)
    ]
    assert missing == []
    stray = [
        f"{spec.family}.{param}"
        for spec in registered()
        for param in spec.bounds
        if param not in spec.parameters()
    ]
    assert stray == []


@pytest.mark.parametrize(
    ("bounds", "text"),
    [
        (Bounds(low=1), "≥ 1"),
        (Bounds(low=0, high=1), "0 ≤ x ≤ 1"),
        (Bounds(low=0, high=1, low_open=True), "0 < x ≤ 1"),
        (Bounds(low=1, words=("auto",)), "≥ 1 or auto"),
        (Bounds(words=("structured", "freeform")), "one of: structured, freeform"),
        (Bounds(low=1, pct=True), "≥ 1 or Npct with 0 < N ≤ 100"),
        (Bounds(low=0, low_open=True), "> 0"),
        (Bounds(high=100, high_open=True), "< 100"),
        (Bounds(high=5), "≤ 5"),
        (Bounds(low=0, high=100, low_open=True, high_open=True), "0 < x < 100"),
        (Bounds(low=40_000), "≥ 40_000"),  # as names write numbers
        (Bounds(low=0.5), "≥ 0.5"),
        (Bounds(low=0.0, high=1.0), "0 ≤ x ≤ 1"),  # a float as short as it is
        (Bounds(words=("auto",), whole=True), "one of: auto"),  # no number to call whole
        (Bounds(low=1, pct=True, whole=True), "a whole number ≥ 1 or Npct with 0 < N ≤ 100"),
        (Bounds(), "any value"),
    ],
)
def test_bounds_describe_themselves(bounds, text):
    assert bounds.describe() == text


@pytest.mark.parametrize(
    ("bounds", "inside", "outside"),
    [
        (Bounds(low=0, high=100, low_open=True, high_open=True), [0.5, 99], [0, 100]),
        (Bounds(low=0, high=1), [0, 1], [-0.01, 1.01]),
        (Bounds(low=1, pct=True), [1, "1pct", "100pct"], [0, "0pct", "101pct", "xpct"]),
        (Bounds(low=0), [0, "8k"], [True, False, -1, "50pct"]),  # a boolean is no number
        (Bounds(words=("structured", "freeform")), ["freeform"], [1, "auto"]),
        (Bounds(low=1, pct=True, whole=True), [1, "2.0", "2.5k", "50pct"], ["1.5", "50.5pct"]),
    ],
)
def test_bounds_accept_what_they_describe(bounds, inside, outside):
    for value in inside:
        bounds.check(value)
    for value in outside:
        with pytest.raises(ValueError):
            bounds.check(value)


def test_bounds_give_the_number_the_parameter_reads():
    """A whole parameter gets an int, even from a whole float; a `k` is the family's own unit
    (pi's 16k reserve is 16,384)."""
    read = Bounds(low=1, whole=True).check(2.0)
    assert read == 2 and type(read) is int
    assert Bounds(low=1).check("2k", 1024) == 2048


def test_out_of_range_values_of_every_builtin_parameter_exit_2_in_one_line(invoke):
    checked = 0
    for spec, param in _builtin_params():
        bounds = spec.bounds.get(param)
        if bounds is None:
            continue
        for value in _outside(bounds):
            name = f"{_name(spec)}[{param}={value}]"
            for args in (
                ("-s", name),
                ("-s", _name(spec), "--set", f"{spec.family}.{param}={value}"),
            ):
                result = invoke("run", RUN42, *args, "--quiet")
                assert result.exit_code == 2, (args, result.output)
                err = result.stderr.strip()
                assert "\n" not in err and "Traceback" not in err, err
                assert err.startswith("error: "), err
                if not err.startswith(f"error: {spec.family}.{param}="):  # not a number at all
                    assert f"{param}=" in err and f"{spec.family}.{param} must be" in err, err
                    assert bounds.describe() in err, err
                checked += 1
    assert checked > 200


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "sliding-0",
            "strategy 'sliding-0': messages=0 is out of range; sliding.messages must be ≥ 1",
        ),
        ("sliding-10[messages=0]", "sliding.messages must be ≥ 1"),
        ("retrieval-top-0", "retrieval.top must be ≥ 1"),
        ("truncate-500[chars=-5]", "chars=-5 is out of range; truncate.chars must be ≥ 1"),
        ("cline-dedup-file-reads[saving=2]", "cline-dedup.saving must be 0 ≤ x ≤ 1"),
        ("codex-compact-at-150pct", "codex-compact.pct must be 1 ≤ x ≤ 100"),
        ("openai-responses-compact-0pct", "must be a whole number ≥ 1 or Npct with 0 < N ≤ 100"),
        ("compact-at-12000-structured[style=terse]", "one of: structured, freeform"),
        (
            "aider-summarize-auto[max_tokens=-3]",  # a number, though its default is a word
            "max_tokens=-3 is out of range; "
            "aider-summarize.max_tokens must be a whole number ≥ 1 or auto",
        ),
        ("roo-truncate-keep-first-half[fraction=0]", "roo-truncate.fraction must be 0 < x ≤ 1"),
    ],
)
def test_audit_cases_are_refused_with_the_range(name, message):
    with pytest.raises(ReplayError, match=re.escape(message)):
        parse_name(name)


def test_a_list_inside_brackets_is_written_with_plus():
    parsed = parse_name("opencode-prune-40k-20k[protected=skill+read]")
    assert parsed.params["protected"] == ("skill", "read")
    with pytest.raises(ReplayError, match=re.escape(
            "override 'read': expected param=value (a list inside brackets is written a+b")):
        parse_name("opencode-prune-40k-20k[protected=skill,read]")


def _typed_spec() -> StrategySpec:
    """A family whose parameters have one default of each type a value is read by."""

    def build(chars=500, share=0.5, keep=(), strict=False, limit=None, *, note="x"):
        return lambda history, ctx: list(history)

    return StrategySpec(family="typed", pattern="typed", build=build, cache_class="churn", rule="",
                        defaults={"chars": 800}, kilo={"chars": 1024})


def test_a_family_s_parameters_are_its_build_s_with_its_defaults_winning():
    assert _typed_spec().parameters() == {
        "chars": 800, "share": 0.5, "keep": (), "strict": False, "limit": None, "note": "x"}


@pytest.mark.parametrize(
    ("param", "raw", "value"),
    [
        ("chars", "40_000", 40_000),  # the module docstring's forms of an int
        ("chars", "2k", 2048),  # the family's own unit
        ("chars", "1.5k", 1536),
        ("share", "90%", 0.9),
        ("share", "0.25", 0.25),
        ("keep", "skill+todo", ("skill", "todo")),
        ("keep", "skill, todo", ("skill", "todo")),
        ("strict", "Yes", True),
        ("strict", "off", False),
        ("strict", "on", True),
        ("limit", "none", None),
        ("limit", "true", True),
        ("limit", "1", 1),  # a digit is a number, not a boolean
        ("limit", "3k", 3000),
        ("limit", "2m", 2_000_000),  # an m is a thousand k
        ("limit", "12345678901234567891", 12345678901234567891),  # exact, however large
        ("limit", "1.5k", 1500),  # a whole number is an int
        ("limit", "0.25", 0.25),
        ("limit", "auto", "auto"),
        ("note", "free text", "free text"),
    ],
)
def test_values_are_read_by_the_type_of_the_parameter_s_default(param, raw, value):
    read = coerce_param(_typed_spec(), param, raw)
    assert read == value and type(read) is type(value)


@pytest.mark.parametrize(
    ("param", "raw", "message"),
    [
        ("chars", "1.5", "typed.chars='1.5': expected an integer"),
        ("strict", "maybe", "typed.strict='maybe': expected true or false"),
        ("share", "x%", "typed.share='x%': expected a number"),
        ("share", "lots", "typed.share='lots': expected a number"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_it(param, raw, message):
    with pytest.raises(ReplayError, match=re.escape(message)):
        coerce_param(_typed_spec(), param, raw)


def test_a_percent_bound_reads_a_percent_sign_whatever_the_name_pattern():
    """A parameter bounded by `PERCENT` takes `40%`, also when no `<N>pct` slot names it."""
    spec = dataclasses.replace(_typed_spec(), bounds={"chars": PERCENT})
    assert coerce_param(spec, "chars", "40%") == 40


def test_a_family_whose_build_shows_no_parameters_accepts_any():
    """A `build` whose signature cannot be read (a builtin) is not refused any parameter."""
    spec = StrategySpec(family="opaque", pattern="opaque", build=max, cache_class="churn",
                        rule="", defaults={"n": 1})
    assert spec.accepts_any() and spec.parameters() == {"n": 1}


def test_a_name_s_label_lists_what_its_brackets_changed_in_order():
    """Every row names exactly what ran: changed parameters sorted by name, a value equal to
    the name's own left out."""
    parsed = parse_name("opencode-prune-40k-20k[protected=skill+read,minimum=10k]")
    assert parsed.name == "opencode-prune-40k-20k[minimum=10000,protected=skill+read]"
    assert parse_name("truncate-500[chars=500]").name == "truncate-500"
    # compared, and written, as the strategy reads them (`8.0k` is the name's own 8k)
    assert parse_name("aider-summarize-8k[max_tokens=8.0k]").name == "aider-summarize-8k"
    assert parse_name("aider-summarize-8k[max_tokens=8000]").name == "aider-summarize-8k"
    assert parse_name("openai-responses-compact-90pct[threshold=50.0pct]").name == (
        "openai-responses-compact-90pct[threshold=50pct]")


def test_a_word_a_parameter_does_not_accept_is_refused_as_such():
    """A number outside the range "is out of range"; a word no range holds "is not accepted"."""
    with pytest.raises(ReplayError, match=re.escape(
            "strategy 'compact-at-12000-structured[style=short]': style=short is not accepted; "
            "compact-at.style must be one of: structured, freeform")):
        parse_name("compact-at-12000-structured[style=short]")


@pytest.mark.parametrize("bad", ["=5", " =5"])
def test_an_override_without_a_parameter_name_is_refused(bad):
    with pytest.raises(ReplayError, match=re.escape("expected param=value")):
        parse_name(f"truncate-500[{bad}]")


def test_a_parameter_given_twice_in_brackets_is_refused():
    """`truncate-500[chars=5,chars=6]` ran with 6, silently; a repeated --set is refused."""
    with pytest.raises(ReplayError, match=re.escape("'chars' is given twice ('5' and '6')")):
        parse_name("truncate-500[chars=5,chars=6]")
    assert parse_name("truncate-500[chars=5,chars=5]").params == {"chars": 5}


def test_names_split_on_commas_outside_brackets():
    assert split_names("a,,b[x=1,y=2], ,c") == ["a", "b[x=1,y=2]", "c"]
    assert split_names("x]y,a[b,c]") == ["x]y", "a[b,c]"]  # a stray `]` opens nothing
    assert split_names("a[x=[1],y=2],b") == ["a[x=[1],y=2]", "b"]  # nested brackets


def test_only_ascii_digits_make_a_number_in_a_name():
    with pytest.raises(ReplayError, match="unknown strategy"):
        parse_name("truncate-٥٠٠")


@pytest.mark.parametrize("value", ["٥", "٥k", "1٥%"])
def test_only_ascii_digits_make_a_number_in_brackets(value):
    """`truncate-500[chars=٥]` ran as `truncate-500[chars=5]`, while the name refuses them."""
    with pytest.raises(ReplayError, match="expected"):
        parse_name(f"truncate-500[chars={value}]")
    with pytest.raises(ReplayError, match="expected a number|not accepted|out of range"):
        parse_name(f"cline-dedup-file-reads[saving={value}]")
    with pytest.raises(ReplayError, match="expected a whole-number percent"):
        parse_name(f"codex-compact-at-90pct[pct={value}]")


def test_two_names_of_one_strategy_run_once_as_the_first():
    assert [s.name for s in resolve("truncate-1k,truncate-1000,truncate-500")] == [
        "truncate-1k", "truncate-500"]
    first, second = parse_name("truncate-500"), parse_name("truncate-500")
    assert resolve([first, second])[0] is first
    # A built strategy is one of those names too: it ran again under its other spelling.
    assert [s.name for s in resolve([parse_name("truncate-1k"), "truncate-1000"])] == [
        "truncate-1k"]
    # One-off strategies (what-ifs: each its own spec of one family) are told apart by name.
    from replay.breakeven._whatif import whatif_strategy

    a, b = whatif_strategy(1, None, compact=True), whatif_strategy(2, None, compact=True)
    assert [s.name for s in resolve([a, b])] == [a.name, b.name]


def test_an_unknown_name_suggests_the_closest_ones():
    with pytest.raises(ReplayError, match=re.escape("(did you mean 'truncate-500' or ")):
        parse_name("trunkate-500")


@pytest.mark.parametrize(
    ("name", "param", "value"),
    [
        ("openai-responses-compact-90pct", "threshold", "1.5"),
        ("openai-responses-compact-90pct", "threshold", "50.5pct"),
        ("aider-summarize-auto", "max_tokens", "1000.5"),
        ("goose-tool-pair-summarize", "cutoff", "1.5"),
        ("goose-tool-pair-summarize", "batch", "2.5"),
    ],
)
def test_a_fraction_of_a_count_is_refused_not_a_traceback(name, param, value):
    """A token or item count whose default is a word (`90pct`, `auto`) took a fraction:
    `openai-responses-compact-90pct[threshold=1.5]` crashed mid-replay (int('1.5'))."""
    with pytest.raises(ReplayError, match=re.escape(f"{param}={value} is")):
        parse_name(f"{name}[{param}={value}]")


def test_a_whole_number_written_as_a_decimal_runs():
    """`threshold=50.0pct` and `2.0` are whole: accepted, and read as the strategy reads them."""
    assert parse_name("openai-responses-compact-90pct[threshold=50.0pct]").params == {
        "threshold": "50pct"
    }
    assert parse_name("openai-responses-compact-90pct[threshold=2.0k]").params == {
        "threshold": 2000
    }
    result = replay.replay(
        RUN42, ["openai-responses-compact-90pct[threshold=50.0pct]"], per_turn=False
    )
    assert result.summary.height == 1


def test_a_non_number_still_says_a_number_is_expected():
    with pytest.raises(ReplayError, match=re.escape("expected an integer")):
        parse_name("truncate-500[chars=lots]")


@pytest.mark.parametrize("value", ["40", "40%", "40pct"])
def test_a_percent_parameter_takes_a_percent_sign(value):
    """The names say `50pct`: `--set …threshold=40%` was refused as "expected an integer"."""
    for name, param in (("gemini-compress-50pct-keep-30pct", "threshold"),
                        ("gemini-compress-50pct-keep-30pct", "preserve"),
                        ("codex-compact-at-90pct", "pct")):
        assert parse_name(f"{name}[{param}={value}]").params[param] == 40


@pytest.mark.parametrize("value", ["1.0", "0.3", "forty"])
def test_a_percent_parameter_refuses_a_fraction_saying_it_is_a_percent(value):
    """`preserve=1.0` was read as 1 %, `0.3` refused as not an integer."""
    with pytest.raises(ReplayError, match=re.escape("expected a whole-number percent")):
        parse_name(f"gemini-compress-50pct-keep-30pct[preserve={value}]")


def test_words_and_numbers_in_names_are_read_as_the_parameter_accepts():
    assert parse_name("aider-summarize-8k").params["max_tokens"] == 8000
    assert parse_name("anthropic-clear-thinking-keep-1[keep=all]").params["keep"] == "all"
    assert parse_name("goose-tool-pair-summarize-12").params["cutoff"] == 12
    assert parse_name("sliding-10").params["modifier"] is None


def test_the_extreme_accepted_values_of_every_builtin_parameter_run():
    """What the bounds let through must replay without error (on the sample run)."""
    names = [
        f"{_name(spec)}[{param}={value}]"
        for spec, param in _builtin_params()
        if param in spec.bounds
        for value in _inside(spec.bounds[param])
    ]
    assert len(names) > 100
    result = replay.replay(RUN42, names, per_turn=False)
    assert result.summary.height == len({parse_name(n).name for n in names})


# --- `replay strategies` shows each name's own parameters -----------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("compact-at-12000-freeform", {"chars": 12000, "style": "freeform"}),
        ("compact-chained-at-12000", {"mode": "chained", "chars": 12000}),
        ("opencode-compact-tail-suffix", {"mode": "suffix"}),
        ("sliding-10-pin-first", {"messages": 10, "modifier": "pin-first"}),
        ("sliding-10", {"messages": 10}),
    ],
)
def test_strategies_json_shows_each_names_own_parameters(invoke, name, expected):
    result = invoke("strategies", "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.stdout) if r["name"] == name]
    assert expected.items() <= row["defaults"].items()
    if name == "sliding-10":
        assert "modifier" not in row["defaults"]  # unset optional parameters are left out


def test_strategies_table_shows_each_names_own_parameters(invoke):
    result = invoke("strategies")
    assert result.exit_code == 0, result.output
    assert "style=freeform" in result.stdout and "mode=chained" in result.stdout
    assert "mode=suffix" in result.stdout and "modifier=pin-first" in result.stdout


def test_docs_table_is_the_registry(invoke):
    """docs/strategies.md's table is `replay strategies --format markdown`, byte for byte
    (regenerate it with that command when a strategy changes)."""
    result = invoke("strategies", "--format", "markdown")
    assert result.exit_code == 0, result.output
    docs = (ROOT / "docs" / "strategies.md").read_text()
    assert result.stdout in docs
    assert docs.count("| name | cache class | defaults | rule | source |") == 1


# --- plug-ins may declare bounds too --------------------------------------------------------

BOUNDED = '''
"""Keep the last N items."""
from replay.strategies import Bounds

NAME = "bounded-last-n"
BOUNDS = {"n": Bounds(low=1)}

def strategy(history, ctx, n=4):
    return list(history[-n:])
'''


def test_a_plugin_file_declares_bounds(tmp_path, clean_registry, invoke):
    path = tmp_path / "bounded.py"
    path.write_text(BOUNDED)
    result = invoke("run", RUN42, "-s", "bounded-last-n[n=0]", "--strategy-file", path, "-q")
    assert result.exit_code == 2
    assert "bounded-last-n.n must be ≥ 1" in result.stderr
    assert parse_name("bounded-last-n[n=2]").params == {"n": 2}


def test_a_plugin_file_with_bounds_for_no_parameter_is_refused(tmp_path, clean_registry):
    from replay.strategies import load_strategy_file

    path = tmp_path / "wrong.py"
    path.write_text(BOUNDED.replace('BOUNDS = {"n"', 'BOUNDS = {"m"'))
    with pytest.raises(ReplayError, match=re.escape("BOUNDS['m'] must be a Bounds for one of")):
        load_strategy_file(path)


def test_each_builtin_family_s_defaults_are_its_first_canonical_name_s_and_its_build_s():
    """A family's declared defaults (the `defaults` column of `replay strategies`) are what its
    first canonical name runs with, and what its build function defaults to: `truncate`
    declaring 400 while `truncate-500` runs 500 would list a default nothing runs with."""
    import inspect

    for spec in registered():
        if spec.is_plugin or not spec.canonical:
            continue
        signature = inspect.signature(spec.build).parameters
        for key, value in spec.defaults.items():
            if key in signature:
                assert signature[key].default == value, (spec.family, key)
        named = parse_name(spec.canonical[0]).params
        for key, value in named.items():
            if value is not None:
                assert spec.parameters()[key] == value, (spec.family, key)
