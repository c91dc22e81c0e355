"""The dated rule files (pricing/cache/*.json): schema, lookups by date/model/variant, overrides,
user files, consistency with genai-prices, docs, and `replay providers`."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from genai_prices import data_snapshot
from genai_prices import types as gp_types

from replay._data import data_dir
from replay._errors import ReplayError
from replay.cache import (
    MECHANISMS,
    MISS_KINDS,
    PROFILES,
    RULE_TYPES,
    CacheRouter,
    ProviderRules,
    RuleBook,
    all_builtin_rules,
    builtin_rules,
    json_schema_text,
    load_rules_file,
    normalize_model,
)
from replay.cache._base import SimRequest
from replay.cache.anthropic import AnthropicSimulator
from replay.cache.testing import CacheLab
from replay.prefix import PrefixDiff
from replay.prices import Pricer, parse_price_override

ROOT = Path(__file__).resolve().parents[1]
OCT = datetime(2026, 10, 20, 12, tzinfo=UTC)


def at(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, 12, tzinfo=UTC)


# -- every file ----------------------------------------------------------------------------------


def test_every_rule_file_loads_and_names_its_source():
    files = all_builtin_rules()
    assert {f.provider for f in files} == {
        "anthropic", "openai", "google", "deepseek", "x-ai", "moonshotai", "qwen", "openrouter"
    }
    for path in sorted((data_dir() / "cache").glob("*.json")):
        if path.name.startswith("_"):
            continue
        rules = load_rules_file(path)
        assert rules.reviewed <= date.today()
        for r in rules.rules:
            assert r.source.strip(), (path.name, r.rule)
            assert re.search(r"https?://|genai-prices|\.com|\.ai", r.source), (path.name, r.source)
        # Every provider that is not a passthrough has a mechanism for every model.
        if not rules.passthrough:
            assert any(r.rule == "mechanism" and r.models is None and r.variant is None
                       for r in rules.rules), path.name


def test_schema_file_is_up_to_date():
    path = data_dir() / "cache" / "_schema.json"
    assert path.read_text(encoding="utf-8") == json_schema_text(), (
        "regenerate with: replay providers --schema > pricing/cache/_schema.json"
    )
    schema = json.loads(path.read_text())
    assert set(schema["$defs"]["Rule"]["properties"]["rule"]["enum"]) == set(RULE_TYPES)


def _file(**rules) -> dict:
    return {"provider": "acme", "reviewed": "2026-11-01", **rules}


def _row(**kw) -> dict:
    return {"rule": "ttl_seconds", "value": 300, "since": "2026-01-01", "source": "https://x", **kw}


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (_row(rule="ttl_second"), "unknown rule name"),
        (_row(rule="min_cacheable_tokens", value="1024"), "non-negative integer"),
        (_row(rule="mechanism", value="magic"), "must be one of"),
        (_row(rule="mechanism", value=None), "must be one of"),
        (_row(rule="read_multiplier", value=0.1), "decimal string"),
        # RULE_TYPES: booleans are not integers or numbers, nothing is negative or infinite
        (_row(rule="refresh_on_read", value=1), "must be true or false"),
        (_row(rule="min_cacheable_tokens", value=True), "non-negative integer"),
        (_row(rule="min_cacheable_tokens", value=-1), "non-negative integer"),
        # a step or a walk of zero: the simulators would read it as 1 (granularity) or read nothing
        (_row(rule="granularity_tokens", value=0), "positive integer"),
        (_row(rule="unit_interval_tokens", value=0), "positive integer"),
        (_row(rule="lookback_positions", value=0), "positive integer"),
        (_row(rule="granularity_tokens", value=1.5), "positive integer"),
        (_row(value=True), "non-negative number"),
        (_row(value=-0.5), "non-negative number"),
        (_row(rule="read_multiplier", value="-0.1"), "non-negative decimal string"),
        (_row(rule="read_multiplier", value="Infinity"), "non-negative decimal string"),
        (_row(rule="read_multiplier", value="a tenth"), "non-negative decimal string"),
        (_row(variant="bedrock"), "not declared"),
        (_row(models="claude-(("), "bad model pattern"),
        (_row(since="soon"), "since"),
        (_row(color="red"), "color"),
    ],
)
def test_invalid_rule_files_are_refused_with_the_place(tmp_path, row, message):
    path = tmp_path / "acme.json"
    path.write_text(json.dumps(_file(rules=[row])))
    with pytest.raises(ReplayError, match=re.escape(message)) as err:
        load_rules_file(path)
    assert str(path) in str(err.value)


def test_dollar_schema_key_is_accepted():
    rules = ProviderRules.model_validate({"$schema": "./_schema.json", **_file()})
    assert rules.schema_ref == "./_schema.json"


# -- lookups by date, model, variant ---------------------------------------------------------------


def test_openai_regime_and_retention_follow_the_date_and_model():
    book = RuleBook(builtin_rules("openai"))
    assert book.get("mechanism", "gpt-5.6-terra", OCT) == "openai-breakpoints"
    assert book.get("mechanism", "gpt-6-luna", OCT) == "openai-breakpoints"
    assert book.get("mechanism", "gpt-5.5", OCT) == "automatic-prefix"
    assert book.get("retention", "gpt-5", at(2026, 5, 28)) == "in_memory"
    assert book.get("retention", "gpt-5", at(2026, 5, 29)) == "24h"
    assert book.get("retention", "gpt-4o", OCT) == "in_memory"
    assert book.get("retention", "gpt-5.1-codex-mini", OCT) == "24h"
    # Measured on real gpt-5.5 rollouts: cached tokens ≡ 384 (mod 512) → 512 steps, offset 128.
    assert book.get("granularity_tokens", "gpt-5.5", OCT) == 512
    assert book.get("granularity_offset_tokens", "gpt-5.5", OCT) == 128
    assert book.uncertain("mechanism", "gpt-6-luna", OCT)


def test_anthropic_dated_rules():
    book = RuleBook(builtin_rules("anthropic"))
    assert book.get("isolation", "claude-sonnet-4-5", at(2026, 2, 4)) == "organization"
    assert book.get("isolation", "claude-sonnet-4-5", at(2026, 2, 5)) == "workspace"
    assert book.get("collapse_tool_runs", "claude-sonnet-4-6", at(2026, 8, 31)) is False
    assert book.get("collapse_tool_runs", "claude-sonnet-4-6", at(2026, 9, 1)) is True
    assert book.get("automatic_breakpoint", "claude-sonnet-4-6", at(2026, 2, 18)) is False
    assert book.get("automatic_breakpoint", "claude-sonnet-4-6", at(2026, 2, 19)) is True
    mins = {m: book.get("min_cacheable_tokens", m, OCT) for m in (
        "claude-fable-5", "claude-opus-5-5", "claude-sonnet-4-5", "claude-opus-4-8",
        "claude-opus-4-7", "claude-3-5-haiku", "claude-opus-4-5", "claude-haiku-4-5",
        "claude-haiku-5-5", "claude-sonnet-5-5",
    )}
    assert mins == {
        "claude-fable-5": 512, "claude-opus-5-5": 512, "claude-sonnet-4-5": 1024,
        "claude-opus-4-8": 1024, "claude-opus-4-7": 2048, "claude-3-5-haiku": 2048,
        "claude-opus-4-5": 4096, "claude-haiku-4-5": 4096, "claude-haiku-5-5": 4096,
        "claude-sonnet-5-5": 1024,
    }
    assert book.uncertain("min_cacheable_tokens", "claude-haiku-5-5", OCT)
    strips = {m: book.get("strips_thinking", m, OCT) for m in (
        "claude-haiku-4-5", "claude-sonnet-4-5", "claude-opus-4-1", "claude-opus-4-5",
        "claude-sonnet-4-6",
    )}
    assert strips == {"claude-haiku-4-5": True, "claude-sonnet-4-5": True,
                      "claude-opus-4-1": True, "claude-opus-4-5": False,
                      "claude-sonnet-4-6": False}


IST = timezone(timedelta(hours=5, minutes=30))
EST = timezone(timedelta(hours=-5))


def test_rows_are_chosen_by_the_utc_date_of_an_offset_timestamp():
    # `since` is a UTC date: 2026-02-19 03:00+05:30 is 2026-02-18 21:30 UTC, before the
    # automatic breakpoint's GA; 2026-02-18 20:00-05:00 is 2026-02-19 01:00 UTC, after it.
    book = RuleBook(builtin_rules("anthropic"))
    model = "claude-sonnet-4-6"
    assert book.get("automatic_breakpoint", model, datetime(2026, 2, 19, 3, tzinfo=IST)) is False
    assert book.get("automatic_breakpoint", model, datetime(2026, 2, 18, 20, tzinfo=EST)) is True
    # the simulators' own lookup too: the same instant gives the same split in any offset
    ts = datetime(2026, 2, 19, 3, tzinfo=IST)
    splits = set()
    for t0 in (ts, ts.astimezone(UTC), ts.astimezone(EST)):
        lab = CacheLab("anthropic", "claude-sonnet-4-5", client="automatic", t0=t0)
        splits.add(lab.send([lab.block("system", 3000), lab.block("user", 100)], at=0).split)
    assert splits == {(0, 0, 0, 3100)}  # no automatic breakpoint before the GA: uncached
    # same local date, next UTC date: the simulator does not keep the previous day's rules
    lab = CacheLab("anthropic", "claude-sonnet-4-5", client="automatic", t0=ts)
    lab.send([lab.block("system", 3000), lab.block("user", 100)], at=0)
    later = lab.send([lab.block("system", 3000), lab.block("user", 100)], at=4 * 3600)
    assert later.split == (0, 0, 3100, 0)  # 07:00+05:30 = 01:30 UTC on 02-19: a 5m write


def test_a_simulators_rule_cache_keeps_defaults_of_different_types_apart():
    """`CacheSimulator.rule` remembers lookups per model and day, keyed by the default too:
    a default of 1 is not one of True (equal and of equal hash in Python)."""
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    req = lab.request([lab.block("system", 3000)], at=0)
    sim = SimRequest(req, [], "s", PrefixDiff(0, None, None, "first", False), None, lab.table)
    simulator = AnthropicSimulator(RuleBook(builtin_rules("anthropic")))
    assert simulator.rule(sim, "no_such_rule", True) is True
    got = simulator.rule(sim, "no_such_rule", 1)
    assert got == 1 and type(got) is int


def test_a_variant_row_beats_a_later_generic_row():
    bedrock = RuleBook(builtin_rules("anthropic"), variant="bedrock")
    direct = RuleBook(builtin_rules("anthropic"))
    assert bedrock.get("isolation", "claude-sonnet-4-5", OCT) == "organization"
    assert direct.get("isolation", "claude-sonnet-4-5", OCT) == "workspace"
    assert bedrock.get("min_cacheable_tokens", "claude-fable-5", OCT) == 1024
    assert direct.get("min_cacheable_tokens", "claude-fable-5", OCT) == 512
    assert bedrock.get("ttl_1h_available", "claude-sonnet-4", OCT) is False
    assert bedrock.get("ttl_1h_available", "claude-sonnet-4-5", OCT) is True


def test_gemini_minimums_and_storage_by_date():
    book = RuleBook(builtin_rules("google"))
    explicit = book.with_variant("explicit")
    assert book.get("min_cacheable_tokens", "gemini-2.5-flash", at(2025, 6, 1)) == 1024
    assert book.get("min_cacheable_tokens", "gemini-2.5-flash", at(2026, 7, 7)) == 2048
    assert book.get("min_cacheable_tokens", "gemini-2.5-pro", at(2025, 6, 1)) == 2048
    assert book.get("min_cacheable_tokens", "gemini-2.5-pro", at(2026, 1, 1)) == 4096
    assert book.get("min_cacheable_tokens", "gemini-3.8-flash", OCT) == 4096
    assert book.get("mechanism", "gemini-2.0-flash", OCT) == "none"
    assert explicit.get("mechanism", "gemini-2.5-flash", OCT) == "explicit-context"
    assert explicit.get("storage_usd_per_mtok_hour", "gemini-3.8-flash", at(2026, 12, 31)) == "0.50"
    assert explicit.get("storage_usd_per_mtok_hour", "gemini-3.8-flash", at(2027, 1, 1)) == "1.00"
    assert book.uncertain("granularity_tokens", "gemini-2.5-flash", OCT)
    assert book.uncertain("ttl_seconds", "gemini-2.5-flash", OCT)


def test_deepseek_v4_rules_start_in_april_2026():
    book = RuleBook(builtin_rules("deepseek"))
    assert book.get("mechanism", "deepseek-v4-flash", at(2026, 3, 31)) == "automatic-prefix"
    assert book.get("mechanism", "deepseek-v4-flash", at(2026, 4, 1)) == "prefix-units"
    assert book.uncertain("unit_interval_tokens", "deepseek-v4-flash", OCT)


def test_research_uncertain_rules_are_flagged():
    checks = [
        ("anthropic", None, "collapse_tool_runs", "claude-sonnet-4-6"),
        ("anthropic", "bedrock", "min_tokens_per_checkpoint", "claude-sonnet-4-5"),
        ("anthropic", None, "ready_after_seconds", "claude-sonnet-4-5"),
        ("openai", None, "ttl_seconds_24h", "gpt-5"),
        ("x-ai", None, "granularity_tokens", "grok-4.6"),
        ("moonshotai", None, "bills_writes", "kimi-k3"),
        ("moonshotai", None, "granularity_tokens", "kimi-k2.6"),
        ("qwen", None, "min_cacheable_tokens", "qwen-plus"),
        ("deepseek", None, "ttl_seconds", "deepseek-v4-flash"),
    ]
    for provider, variant, rule, model in checks:
        assert RuleBook(builtin_rules(provider), variant=variant).uncertain(rule, model, OCT), (
            provider, rule
        )


def test_rules_before_the_first_row_are_an_error():
    book = RuleBook(builtin_rules("openai"))
    with pytest.raises(ReplayError, match="no `mechanism` cache rule") as err:
        book.get("mechanism", "gpt-4o", at(2023, 1, 1))
    # It names the ways to add one that exist: a rule file, or an override from Python.
    assert str(err.value).endswith(
        "add it with --cache-rules FILE (or, from Python, "
        "rule_overrides={'openai.mechanism': VALUE})"
    )


# -- overrides and user files ----------------------------------------------------------------------


def test_overrides_by_name_provider_and_variant():
    rules = builtin_rules("anthropic")
    book = RuleBook(rules, {"ttl_seconds_5m": 1, "anthropic.ttl_seconds_5m": 2}, "bedrock")
    assert book.get("ttl_seconds_5m", "claude-sonnet-4-5", OCT) == 2
    book = RuleBook(rules, {"anthropic.bedrock.ttl_seconds_5m": 3, "ttl_seconds_5m": 1},
                    "bedrock")
    assert book.get("ttl_seconds_5m", "claude-sonnet-4-5", OCT) == 3
    assert RuleBook(rules, {"ttl_seconds_5m": 1}).get("ttl_seconds_5m", "x", OCT) == 1
    assert RuleBook(rules, {"openai.ttl_seconds_5m": 9}).get(
        "ttl_seconds_5m", "claude-sonnet-4-5", OCT) == 300


def test_overrides_are_checked_as_rule_file_values_are():
    # An override from Python went straight to the simulator unchecked: `granularity_tokens: 0`
    # was read as 1.
    rules = builtin_rules("openai")
    with pytest.raises(ReplayError, match=r"rule_overrides\['openai.granularity_tokens'\] = 0: "
                                          "must be a positive integer"):
        RuleBook(rules, {"openai.granularity_tokens": 0}).get("granularity_tokens", "gpt-5", OCT)
    with pytest.raises(ReplayError, match="ttl_seconds_5m.*must be a non-negative number"):
        RuleBook(builtin_rules("anthropic"), {"ttl_seconds_5m": "300"}).get(
            "ttl_seconds_5m", "claude-sonnet-4-5", OCT)


def test_override_changes_the_simulation():
    # A 10-minute gap misses under the 5m TTL, hits when the TTL is overridden to 15 minutes.
    def second(overrides):
        lab = CacheLab("anthropic", "claude-sonnet-4-5", overrides=overrides)
        head = [lab.block("system", 2000), lab.block("user", 100)]
        lab.send(head, at=0)
        return lab.send(head, at=600)

    assert second(None).outcome.cache_read == 0
    assert second({"anthropic.ttl_seconds_5m": 900}).outcome.cache_read == 2100


@pytest.mark.parametrize(("provider", "model", "read"), [
    ("anthropic", "claude-sonnet-4-5", 0),
    ("deepseek", "deepseek-chat", 2100),  # (its units at the end of a request are not delayed)
])
def test_a_delay_past_the_calendar_means_never_ready(provider, model, read):
    """A `ready_after_seconds` of ages (or a request near year 9999) ended in an OverflowError
    traceback: what it delays is simply never ready."""
    lab = CacheLab(provider, model, overrides={f"{provider}.ready_after_seconds": 1e20})
    head = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(head, at=0)
    assert lab.send(head, at=600).outcome.cache_read == read


def test_user_file_overlays_the_builtin_file(tmp_path):
    user = ProviderRules.model_validate({
        "provider": "openai", "reviewed": "2026-11-01",
        "rules": [{"rule": "ttl_seconds_24h", "value": 7200, "since": "2020-01-01",
                   "source": "my measurements"}],
    })
    router = CacheRouter(user)
    route = router.route("openai", "gpt-5")
    book = router.book(route, None)
    assert book.get("ttl_seconds_24h", "gpt-5", OCT) == 7200  # the user's row
    assert book.get("min_cacheable_tokens", "gpt-5", OCT) == 1024  # still the built-in
    replacing = user.model_copy(update={"replace": True})
    book = CacheRouter(replacing).book(CacheRouter(replacing).route("openai", "gpt-5"), None)
    with pytest.raises(ReplayError):
        book.get("min_cacheable_tokens", "gpt-5", OCT)


def test_a_user_file_layered_over_a_builtin_one_may_name_its_variants(tmp_path):
    """docs/cache-rules.md: a user file is layered over the built-in one, so a row may set a
    rule of the built-in file's variant (Claude on Vertex) without declaring it again; a file
    that replaces the built-in one must declare its variants."""
    row = {"rule": "endpoint", "value": "regional", "since": "2024-01-01", "source": "contract",
           "variant": "vertex"}
    path = tmp_path / "anthropic.json"
    path.write_text(json.dumps({"provider": "anthropic", "reviewed": "2026-12-01",
                                "rules": [row]}))
    router = CacheRouter(load_rules_file(path))
    route = router.route("google", "claude-sonnet-4-5")
    assert route.variant == "vertex"
    at = datetime(2026, 10, 20, tzinfo=UTC)
    assert router.price_factor("google", "claude-sonnet-4-5", at) == Decimal("1.1")  # regional
    path.write_text(json.dumps({"provider": "anthropic", "reviewed": "2026-12-01",
                                "replace": True, "rules": [row]}))
    with pytest.raises(ReplayError, match="variant 'vertex' is not declared in `variants`"):
        load_rules_file(path)


def test_user_file_for_a_new_provider():
    user = ProviderRules.model_validate({
        "provider": "mistral", "reviewed": "2026-11-01",
        "rules": [
            {"rule": "mechanism", "value": "automatic-prefix", "since": "2025-01-01",
             "source": "https://docs.mistral.ai"},
            {"rule": "min_cacheable_tokens", "value": 512, "since": "2025-01-01", "source": "x"},
            {"rule": "ttl_seconds", "value": 600, "since": "2025-01-01", "source": "x"},
        ],
    })
    with pytest.raises(ReplayError, match="no cache rules for provider 'mistral'"):
        CacheRouter().route("mistral", "mistral-large")
    lab = CacheLab("mistral", "mistral-large", rules=user, client="none")
    lab.pricer = Pricer(dict([parse_price_override("mistral-large=input:2,output:6")]))
    head = [lab.block("system", 600), lab.block("user", 100)]
    assert lab.send(head, at=0).outcome.route == "mistral"
    assert lab.send(head, at=5).split == (700, 0, 0, 0)


def test_model_ids_are_normalized_for_rule_patterns():
    cases = {
        "anthropic/claude-sonnet-4.5": "claude-sonnet-4-5",
        "global.anthropic.claude-sonnet-4-5-20250929-v1:0": "claude-sonnet-4-5",
        "us.anthropic.claude-3-5-haiku-20241022-v1:0": "claude-3-5-haiku",
        "claude-3-5-haiku-latest": "claude-3-5-haiku",
        "claude-sonnet-4-5@20250929": "claude-sonnet-4-5",
        "openai/gpt-5.1": "gpt-5.1",
        "qwen/qwen-plus:thinking": "qwen-plus",
        "GPT-4o-2024-08-06": "gpt-4o",
    }
    for raw, norm in cases.items():
        assert normalize_model(raw) == norm


def test_routes():
    router = CacheRouter()
    assert router.route("aws", "global.anthropic.claude-opus-4-5-v1:0").label == "anthropic/bedrock"
    assert router.route("google", "claude-opus-4-5").label == "anthropic/vertex"
    assert router.route("google", "gemini-2.5-pro").label == "google"
    assert router.route("openrouter", "x-ai/grok-4.6").label == "openrouter>x-ai"
    assert router.route("dashscope", "qwen-plus").label == "qwen"
    assert router.route("xai", "grok-4.6").label == "x-ai"


# -- consistency with genai-prices -----------------------------------------------------------------


def _base(value):
    if isinstance(value, gp_types.TieredPrices):
        return value.base
    return value


MULTIPLIER_DATES = [
    datetime(2025, 3, 1, 12, tzinfo=UTC),
    datetime(2025, 6, 9, 12, tzinfo=UTC),
    datetime(2025, 7, 1, 12, tzinfo=UTC),
    datetime(2026, 1, 1, 12, tzinfo=UTC),
    datetime(2026, 3, 1, 12, tzinfo=UTC),
    OCT,
]


@pytest.mark.parametrize(
    ("provider", "rule", "price_key"),
    [
        ("anthropic", "read_multiplier", "cache_read_mtok"),
        ("anthropic", "write_multiplier_5m", "cache_write_mtok"),
        ("anthropic", "write_multiplier_1h", "cache_write_1h_mtok"),
        ("openai", "read_multiplier", "cache_read_mtok"),
        ("openai", "write_multiplier", "cache_write_mtok"),
        ("x-ai", "read_multiplier", "cache_read_mtok"),
        ("moonshotai", "read_multiplier", "cache_read_mtok"),
        ("moonshotai", "write_multiplier_5m", "cache_write_mtok"),
        ("moonshotai", "write_multiplier_1h", "cache_write_1h_mtok"),
    ],
)
def test_informational_multipliers_agree_with_genai_prices(provider, rule, price_key):
    """The rule files' multipliers against the rates replay prices with (genai-prices' own, with
    the corrections of pricing/price_patches.json), on several dates: a rate genai-prices got
    wrong for a past period only (o3 before 2025-06-10) shows on its own dates."""
    book = RuleBook(builtin_rules(provider))
    pricer = Pricer()
    snapshot = data_snapshot.get_snapshot()
    checked = set()
    (entry,) = [p for p in snapshot.providers if p.id == provider]
    for ts in MULTIPLIER_DATES:
        for info in entry.models:
            try:
                prices = pricer.model_price(model=info.id, provider=provider, ts=ts)
            except ReplayError:  # a model without an input price
                continue
            value = _base(getattr(prices, price_key, None))
            base = _base(prices.input_mtok)
            mult = book.get(rule, normalize_model(info.id), ts, None)
            if value is None or not base or mult is None:
                continue
            assert Decimal(mult) == value / base, (info.id, f"{ts:%Y-%m-%d}", mult, value / base)
            checked.add(ts)
    assert checked


# -- docs and CLI ----------------------------------------------------------------------------------


def test_docs_describe_every_rule_cause_profile_and_mechanism():
    text = (ROOT / "docs" / "cache-rules.md").read_text(encoding="utf-8")
    for name in [*RULE_TYPES, *MISS_KINDS, *PROFILES, *MECHANISMS]:
        assert f"`{name}`" in text, name


def _cli(*args):
    from replay.cli._main import cli, load_commands

    load_commands()
    return CliRunner().invoke(cli, ["providers", *args])


def test_providers_lists_rules_in_force_as_json():
    result = _cli("--at", "2026-03-01", "--provider", "openai", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["at"] == "2026-03-01"
    (openai,) = doc["providers"]
    retention = [r for r in openai["rules"] if r["rule"] == "retention"]
    assert [r["value"] for r in retention] == ["in_memory"]  # the 24h default came 2026-05-29
    assert all(r["source"] and r["since"] <= "2026-03-01" for r in openai["rules"])


def test_providers_before_every_rule_says_so():
    result = _cli("--model", "gpt-5", "--at", "1990-01-01")
    assert result.exit_code == 0, result.output
    assert "no rule in force on that date" in " ".join(result.output.split())
    listed = _cli("--provider", "openai", "--at", "1990-01-01")  # no table at all
    assert "no rule in force on 1990-01-01" in " ".join(listed.output.split())


def test_providers_resolves_a_model():
    result = _cli("--provider", "aws", "--model", "global.anthropic.claude-fable-5-v1:0",
                  "--at", "2026-10-20", "--format", "json")
    assert result.exit_code == 0, result.output
    resolved = json.loads(result.output)["resolved"]
    assert resolved["route"] == "anthropic/bedrock"
    values = {r["rule"]: r["value"] for r in resolved["rules"]}
    assert values["min_cacheable_tokens"] == 1024
    assert values["automatic_breakpoint"] is False



def test_providers_says_when_a_model_is_none_of_the_rules_families():
    """Claude asked of openai resolves by openai's general rows; the simulating commands
    refuse it (no price), `providers` said nothing of it."""
    doc = json.loads(_cli("--provider", "openai", "--model", "claude-sonnet-4-5",
                          "--format", "json").output)
    assert doc["resolved"]["covered"] is False
    assert doc["resolved"]["model_patterns"] == ["^gpt-", "^o[1-9]", "^codex"]
    table = " ".join(_cli("--provider", "openai", "--model", "claude-sonnet-4-5").output.split())
    assert ("note: claude-sonnet-4-5 matches none of the model families of openai's rules "
            "(^gpt-, ^o[1-9], ^codex)") in table
    for provider, model in (("openai", "gpt-5"), ("google", "claude-sonnet-4-5"),
                            ("openrouter", "anthropic/claude-sonnet-4.5")):
        result = _cli("--provider", provider, "--model", model, "--format", "json")
        assert json.loads(result.output)["resolved"]["covered"] is True, (provider, model)
        assert "matches none" not in _cli("--provider", provider, "--model", model).output


def test_a_provider_served_by_a_variant_lists_without_a_model():
    """`aws` has no rule file of its own: Claude on Bedrock is a variant of anthropic's. It
    lists that file (a model was needed before); google lists its own, then Claude on Vertex."""
    result = _cli("--provider", "aws", "--at", "2026-10-20", "--format", "json")
    assert result.exit_code == 0, result.output
    (anthropic,) = json.loads(result.output)["providers"]
    assert anthropic["provider"] == "anthropic"
    assert {"name": "bedrock", "when": "provider", "provider": "aws", "models": "claude"} in [
        {k: v.get(k) for k in ("name", "when", "provider", "models")}
        for v in anthropic["variants"]
    ]
    assert any(r["variant"] == "bedrock" for r in anthropic["rules"])
    table = _cli("--provider", "aws", "--at", "2026-10-20")
    assert table.exit_code == 0 and "variant bedrock (provider aws" in table.output
    google = json.loads(_cli("--provider", "google", "--format", "json").output)
    assert [p["provider"] for p in google["providers"]] == ["google", "anthropic"]


def test_providers_for_a_model_shows_only_its_provider():
    result = _cli("--model", "claude-sonnet-4-6", "--at", "2026-10-20", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [p["provider"] for p in doc["providers"]] == ["anthropic"]  # not all eight
    assert doc["resolved"]["model"] == "claude-sonnet-4-6"


def test_providers_guesses_a_model_genai_prices_lacks_from_the_rule_files_families():
    """`--model` guesses the provider (the help says so): genai-prices has no Qwen provider
    (docs/cache-rules.md), but `qwen.json` covers `^qwen` models, so `qwen-plus` is Qwen's."""
    result = _cli("--model", "qwen-plus", "--at", "2026-10-20", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [p["provider"] for p in doc["providers"]] == ["qwen"]
    assert doc["resolved"]["model"] == "qwen-plus"


def test_providers_for_a_model_no_provider_serves_names_its_own_option():
    result = _cli("--model", "nosuch-model")
    assert result.exit_code == 2
    assert "name it with --provider" in result.output and "--price" not in result.output


def test_providers_table_marks_uncertain_rules():
    result = _cli("--provider", "google", "--at", "2026-10-20")
    assert result.exit_code == 0, result.output
    assert "ai.google.dev/gemini-api/docs/caching" in result.output
    assert " ?" in result.output
    assert "variant explicit" in result.output


def test_providers_table_columns_name_the_rule_then_where_it_applies():
    """rule, models, variant (what a row applies to), then its value, date and source."""
    result = _cli("--provider", "google", "--at", "2026-10-20")
    header = next(line for line in result.output.splitlines() if "┃ rule" in line)
    assert [cell.strip() for cell in header.strip("┃ ").split("┃")] == [
        "rule", "models", "variant", "value", "since", "source"
    ]


def test_providers_table_heads_each_provider_with_its_aliases_and_models():
    doc = json.loads(_cli("--provider", "x-ai", "--format", "json").output)
    (xai,) = doc["providers"]
    lines = _cli("--provider", "x-ai").output.splitlines()
    assert lines[0].startswith(f"x-ai (also: {', '.join(xai['aliases'])}) · reviewed ")
    assert f"models: {', '.join(xai['models'])}" in lines


def test_providers_all_and_schema(tmp_path):
    result = _cli("--format", "json")
    assert result.exit_code == 0
    assert len(json.loads(result.output)["providers"]) == 8
    out = tmp_path / "schema.json"
    assert _cli("--schema", "-o", str(out)).exit_code == 0
    assert out.read_text() == json_schema_text()
    # `--format json` says what `--schema` prints anyway.
    assert _cli("--schema", "--format", "json").output == json_schema_text()


def test_rules_in_force_is_what_the_cli_prints():
    from datetime import date

    from replay.cache import rules_in_force

    result = _cli("--model", "gpt-5.5", "--at", "2026-10-20", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = rules_in_force(date(2026, 10, 20), model="gpt-5.5")
    assert json.loads(result.output) == json.loads(json.dumps(doc))
    assert [p["provider"] for p in doc["providers"]] == ["openai"]
    with pytest.raises(ReplayError, match="provider 'nope': no cache rules; known: anthropic"):
        rules_in_force(date(2026, 10, 20), provider="nope")
    with pytest.raises(ReplayError, match=r"x-ai; variants: aws \(anthropic/bedrock, models cl"):
        rules_in_force(date(2026, 10, 20), provider="bedrock")
    with pytest.raises(ReplayError, match="provider 'aws': no cache rules for model 'gpt-5'"):
        rules_in_force(date(2026, 10, 20), provider="aws", model="gpt-5")
    # With a model: the file its requests follow, not the provider's own when it routes the
    # model elsewhere (Claude on Google follows anthropic's vertex variant).
    routed = rules_in_force(date(2026, 10, 20), provider="google", model="claude-sonnet-4-5")
    assert [p["provider"] for p in routed["providers"]] == ["anthropic"]
    assert routed["resolved"]["route"] == "anthropic/vertex"
    own = rules_in_force(date(2026, 10, 20), provider="google", model="gemini-2.5-flash")
    assert [p["provider"] for p in own["providers"]] == ["google"]


def test_providers_user_errors():
    bad_date = _cli("--at", "last tuesday")
    assert bad_date.exit_code == 2 and "YYYY-MM-DD" in bad_date.output
    unknown = _cli("--provider", "nope")
    assert unknown.exit_code == 2 and "known:" in unknown.output


def test_rules_in_force_says_whose_row_and_resolves_every_mode_in_rule_order(tmp_path):
    """`replay providers --format json` (docs/cache-rules.md): each row says whether it comes
    from the user's file or the built-in one, the provider keeps the built-in file's aliases and
    a variant lists only the fields it has; a model's rules are resolved for its route (a
    variant's own rows and the general ones) and for each mode variant (only that mode's own
    rows), rule by rule in name order."""
    from datetime import date

    from replay.cache import rules_in_force

    at = date(2026, 10, 20)
    mine = tmp_path / "qwen.json"
    mine.write_text(json.dumps({"provider": "qwen", "reviewed": "2026-11-01", "rules": [
        {"rule": "ttl_seconds", "value": 600, "since": "2024-01-01", "source": "ours"}]}))
    (qwen,) = rules_in_force(at, provider="qwen", cache_rules=mine)["providers"]
    assert qwen["aliases"] == rules_in_force(at, provider="qwen")["providers"][0]["aliases"]
    assert "dashscope" in qwen["aliases"]
    assert [r["origin"] for r in qwen["rules"] if r["source"] == "ours"] == ["user file"]
    assert {r["origin"] for r in qwen["rules"] if r["source"] != "ours"} == {"built-in"}
    assert qwen["variants"] and all(None not in v.values() for v in qwen["variants"])

    bedrock = rules_in_force(at, provider="aws", model="claude-sonnet-4-5")["resolved"]["rules"]
    assert {r["applies_to"] for r in bedrock} == {"bedrock"}
    assert [r["rule"] for r in bedrock] == sorted(r["rule"] for r in bedrock)
    assert {r["variant"] for r in bedrock} == {"bedrock", None}  # its own rows, general ones
    assert "mechanism" in [r["rule"] for r in bedrock if r["variant"] is None]

    qwen = rules_in_force(at, provider="qwen", model="qwen-plus")["resolved"]["rules"]
    modes = {mode: [r for r in qwen if r["applies_to"] == mode] for mode in ("default", "explicit")}
    assert len(modes["default"]) + len(modes["explicit"]) == len(qwen)
    for rows in modes.values():
        assert rows and [r["rule"] for r in rows] == sorted(r["rule"] for r in rows)
    assert {r["variant"] for r in modes["explicit"]} == {"explicit"}
    assert {r["variant"] for r in modes["default"]} == {None}


def test_providers_guesses_a_model_s_provider_only_from_one_family_and_its_normalized_id(
    tmp_path,
):
    """`--model` without `--provider`: the one rule file naming a family the normalized model
    id belongs to (`Qwen-Plus` is `qwen-plus`); two files naming it leave it unknown. A file
    naming no family says nothing of the model (not "matches none")."""
    from datetime import date

    from replay.cache import rules_in_force

    at = date(2026, 10, 20)
    assert [p["provider"] for p in rules_in_force(at, model="Qwen-Plus")["providers"]] == ["qwen"]
    also = tmp_path / "acme.json"
    also.write_text(json.dumps({"provider": "acme", "reviewed": "2026-11-01", "models": ["^qwen"],
                                "rules": [{"rule": "mechanism", "value": "none",
                                           "since": "2024-01-01", "source": "ours"}]}))
    with pytest.raises(ReplayError, match="cannot tell which provider serves model 'qwen-plus'"):
        rules_in_force(at, model="qwen-plus", cache_rules=also)
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"provider": "bare", "reviewed": "2026-11-01",
                                "rules": [{"rule": "mechanism", "value": "none",
                                           "since": "2024-01-01", "source": "ours"}]}))
    resolved = rules_in_force(at, provider="bare", model="m-1", cache_rules=bare)["resolved"]
    assert resolved["model_patterns"] == [] and resolved["covered"] is True


def test_providers_names_a_provider_in_any_case_and_says_why_a_route_is_missing():
    """`--provider` is an id in any case; a model its file routes nowhere is told by the
    route's own error (the routes it has), the model as given kept beside its normalized id;
    a mode variant naming a provider serves nothing there."""
    from datetime import date

    from replay.cache import rules_in_force

    at = date(2026, 10, 20)
    assert [p["provider"] for p in rules_in_force(at, provider=" AWS ")["providers"]] == [
        "anthropic"
    ]
    with pytest.raises(ReplayError, match="no passthrough route for model 'nosuch/m-1'; routes"):
        rules_in_force(at, provider="openrouter", model="nosuch/m-1")
    resolved = rules_in_force(at, provider="openrouter", model="anthropic/claude-sonnet-4.5")
    assert (resolved["resolved"]["model"], resolved["resolved"]["rules_model"]) == (
        "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"
    )


def test_providers_lists_no_file_for_a_mode_variant_naming_the_provider(tmp_path):
    from datetime import date

    from replay.cache import rules_in_force

    mine = tmp_path / "acme.json"
    mine.write_text(json.dumps({
        "provider": "acme", "reviewed": "2026-11-01",
        "variants": [{"name": "marked", "when": "breakpoints", "provider": "zeta"}],
        "rules": [{"rule": "mechanism", "value": "none", "since": "2024-01-01", "source": "x"}],
    }))
    with pytest.raises(ReplayError, match="provider 'zeta': no cache rules; known: "):
        rules_in_force(date(2026, 10, 20), provider="zeta", cache_rules=mine)
