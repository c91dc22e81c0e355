"""Rule lookups, routing and simulator edges that no other test pinned. Each test here failed on a
deliberate one-line bug (a `>` for a `>=`, a guard or a cache key dropped, a slice taken from the
wrong end) that the rest of the suite let through (mutation audit of the cache rules, router,
GPT-5.6, DeepSeek V4 and automatic-prefix simulators).
Split = (read, 1h write, 5m write, uncached)."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from replay._errors import ReplayError
from replay.cache import (
    Breakpoint,
    ProviderRules,
    RuleBook,
    builtin_rules,
    load_rules_file,
    rows_in_force,
)
from replay.cache._route import builtin_book, simulator_for
from replay.cache._rules import utc_date
from replay.cache._store import CacheStore
from replay.cache.automatic import MAX_PROMPTS
from replay.cache.openai import eligible_ends
from replay.cache.testing import CacheLab
from replay.prices import Pricer, parse_price_override

OCT = datetime(2026, 10, 20, 12, tzinfo=UTC)
TERRA = "gpt-5.6-terra"
V4 = "deepseek-v4-flash"


def _row(**kw) -> dict:
    return {"rule": "ttl_seconds", "value": 300, "since": "2026-01-01", "source": "https://x", **kw}


def _file(*rows: dict, **kw) -> ProviderRules:
    return ProviderRules.model_validate(
        {"provider": "acme", "reviewed": "2026-11-01", "rules": list(rows), **kw}
    )


def _override_pricer(model: str) -> Pricer:
    return Pricer(dict([parse_price_override(f"{model}=input:1,output:2,cache_read:0.1")]))


# ---------------------------------------------------------------- _rules.py


@pytest.mark.parametrize(("rule", "zero"), [
    ("storage_usd_per_mtok_hour", "0"),  # "a non-negative decimal string"
    ("ready_after_seconds", 0),  # "a non-negative number"
])
def test_a_zero_rule_value_is_valid(rule, zero):
    rules = _file(_row(rule=rule, value=zero))
    assert RuleBook(rules).get(rule, "m", OCT) == zero


def test_a_builtin_file_is_found_by_an_alias():
    assert builtin_rules("dashscope").provider == "qwen"


def test_a_rule_file_s_variant_is_found_by_name():
    # docs/cache-rules.md: anthropic.json's variant `bedrock` is Claude on Bedrock (`aws`).
    rules = builtin_rules("anthropic")
    assert rules.variant("bedrock").provider == "aws"
    assert rules.variant("vertex").provider == "google"
    assert rules.variant("azure") is None


def test_rows_in_force_take_effect_on_their_own_day_and_tie_like_the_rule_book():
    """`replay providers --at D` lists a row whose `since` is D, and of two rows of one series
    that take effect the same day, the first in the file: the row `RuleBook.get` answers."""
    rules = _file(
        _row(value=300, since="2026-01-01"),
        _row(value=600, since="2026-03-01"),
        _row(value=900, since="2026-03-01"),
    )
    day = date(2026, 3, 1)
    assert [r.value for r in rows_in_force(rules, day)] == [600]
    assert RuleBook(rules).get("ttl_seconds", "m", day) == 600
    assert [r.value for r in rows_in_force(rules, date(2026, 2, 28))] == [300]


def test_an_overridden_rule_is_no_longer_uncertain():
    rules = builtin_rules("openai")
    assert RuleBook(rules).uncertain("mechanism", "gpt-6-luna", OCT)
    forced = RuleBook(rules, {"openai.mechanism": "openai-breakpoints"})
    assert not forced.uncertain("mechanism", "gpt-6-luna", OCT)


def _load(tmp_path, data) -> ProviderRules:
    path = tmp_path / "acme.json"
    path.write_bytes(data if isinstance(data, bytes) else json.dumps(data).encode())
    return load_rules_file(path)


@pytest.mark.parametrize(("fields", "message"), [
    ({"models": ["gpt-(("]}, "bad model pattern 'gpt-(('"),
    ({"variants": [{"name": "v", "when": "provider", "provider": "p", "models": "(("}]},
     "bad model pattern '(('"),
    ({"passthrough": [{"models": "^a/((", "to": "openai"}]}, "bad model pattern '^a/(('"),
    ({"variants": [{"name": "v", "when": "provider"}]}, "`when: provider` needs `provider`"),
])
def test_every_model_pattern_and_provider_variant_of_a_file_is_checked(tmp_path, fields, message):
    # ProviderRules: the file's `models`, its variants' and its passthrough routes' are Python
    # regexes; a `when: provider` variant names the provider it serves.
    with pytest.raises(ReplayError, match=re.escape(message)):
        _load(tmp_path, {"provider": "acme", "reviewed": "2026-11-01", **fields})


def test_rule_file_errors_name_the_file_and_what_is_wrong(tmp_path):
    path = tmp_path / "acme.json"
    with pytest.raises(ReplayError) as err:
        _load(tmp_path, {"provider": "acme", "reviewed": "2026-11-01",
                         "rules": [_row(rule="ttl_second")]})
    assert str(err.value).startswith(
        f"{path}: invalid cache rules: rules[0] (ttl_second): unknown rule name; known: "
    )
    with pytest.raises(ReplayError, match=r"acme\.json: invalid cache rules"):
        _load(tmp_path, [])  # JSON, but not an object
    with pytest.raises(ReplayError, match=r"invalid cache rules at `provider`"):
        _load(tmp_path, {"provider": ["openai"], "reviewed": "2026-11-01"})
    with pytest.raises(ReplayError, match=r"cannot read cache rules \(expected UTF-8 JSON"):
        _load(tmp_path, b'{"provider": "acme\xff"}')
    with pytest.raises(ReplayError, match=r"acme\.json: cannot read cache rules"):
        _load(tmp_path, b"[" * 100_000)  # nested too deep for the JSON decoder
    with pytest.raises(ReplayError, match=r"missing\.json: cannot read cache rules"):
        load_rules_file(tmp_path / "missing.json")


def test_a_user_file_for_a_provider_without_a_builtin_file_loads(tmp_path):
    # docs/cache-rules.md: `--cache-rules` "describes a provider `replay` does not know".
    rules = _load(tmp_path, {"provider": "mistral", "reviewed": "2026-11-01",
                             "rules": [_row(rule="min_cacheable_tokens", value=512)]})
    assert RuleBook(rules).get("min_cacheable_tokens", "mistral-large", OCT) == 512


def test_builtin_rules_skip_the_schema_and_list_the_known_providers():
    # `builtin_rule_files`: pricing/cache/*.json, the schema aside, by name.
    known = "anthropic, deepseek, google, moonshotai, openai, openrouter, qwen, x-ai"
    with pytest.raises(ReplayError, match=re.escape(f"provider '_schema'; known: {known}")):
        builtin_rules("_schema")


def test_naive_timestamps_are_utc_whatever_the_local_zone(monkeypatch):
    # `utc_date`: "naive = UTC, as in genai-prices". 20:00 on 02-18 is 02-18 (the automatic
    # breakpoint's GA is 02-19) even where the machine's clock is five hours behind UTC.
    monkeypatch.setenv("TZ", "EST5")
    time.tzset()
    try:
        naive = datetime(2026, 2, 18, 20)
        assert utc_date(naive) == date(2026, 2, 18)
        book = RuleBook(builtin_rules("anthropic"))
        assert book.get("automatic_breakpoint", "claude-sonnet-4-6", naive) is False
    finally:
        monkeypatch.undo()
        time.tzset()


def test_a_provider_variant_override_beats_a_provider_override():
    # docs/cache-rules.md: keyed `rule`, `provider.rule` or `provider.variant.rule` (most
    # specific wins).
    overrides = {"anthropic.ttl_seconds_5m": 2, "anthropic.bedrock.ttl_seconds_5m": 3}
    book = RuleBook(builtin_rules("anthropic"), overrides, "bedrock")
    assert book.get("ttl_seconds_5m", "claude-sonnet-4-5", OCT) == 3
    assert book.with_variant("vertex").get("ttl_seconds_5m", "claude-sonnet-4-5", OCT) == 2


def test_a_missing_rule_names_the_variant_and_the_utc_date():
    book = RuleBook(builtin_rules("anthropic"), variant="bedrock")
    ist = datetime(2020, 1, 1, 3, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    with pytest.raises(ReplayError, match=re.escape(
        "no `mechanism` cache rule for anthropic/bedrock model 'claude-sonnet-4-5' on 2019-12-31"
    )):
        book.get("mechanism", "claude-sonnet-4-5", ist)


def test_only_rows_marked_uncertain_are_uncertain():
    rules = _file(_row(), _row(rule="min_cacheable_tokens", value=1024, uncertain=True))
    book = RuleBook(rules)
    assert book.uncertain("ttl_seconds", "m", OCT) is False
    assert book.uncertain("min_cacheable_tokens", "m", OCT) is True
    assert book.uncertain("max_writes", "m", OCT) is False  # no row at all


def test_rows_in_force_keep_one_row_per_series_in_file_order():
    """`rows_in_force`: for each (rule, models, variant) series its latest row, in file order."""
    rules = _file(
        _row(value=300),
        _row(value=900, models="^big"),
        _row(value=600, variant="v"),
        _row(value=450, since="2026-02-01"),
        variants=[{"name": "v", "when": "profile"}],
    )
    assert [r.value for r in rows_in_force(rules, date(2026, 3, 1))] == [900, 600, 450]


def test_a_rule_book_needs_a_file_and_keeps_its_layers_and_overrides_per_variant():
    with pytest.raises(ReplayError, match="at least one rule file"):
        RuleBook([])
    user = _file(_row(value=111), provider="openai")
    book = RuleBook([user, builtin_rules("openai")], {"openai.retention": "in_memory"})
    other = book.with_variant("explicit")
    assert other.variant == "explicit"
    assert other.get("ttl_seconds", "gpt-5", OCT) == 111  # the user's layer
    assert other.get("retention", "gpt-5", OCT) == "in_memory"  # the override (built-in: 24h)
    assert other.get("min_cacheable_tokens", "gpt-5", OCT) == 1024  # the built-in layer


def test_a_user_file_named_by_an_alias_answers_to_the_builtin_provider_s_overrides():
    # RuleBook: the provider is the base (built-in) file's, the last layer: a user file for
    # `dashscope` layers over qwen.json, and overrides are keyed `qwen.rule` (docs: provider id).
    user = _file(_row(value=111), provider="dashscope")
    book = RuleBook([user, builtin_rules("qwen")], {"qwen.ttl_seconds": 42})
    assert book.provider == "qwen" and book.file is builtin_rules("qwen")
    assert book.get("ttl_seconds", "qwen-plus", OCT) == 42
    with pytest.raises(ReplayError, match="no `max_writes` cache rule for qwen model"):
        book.get("max_writes", "qwen-plus", OCT)


# ---------------------------------------------------------------- _route.py


def test_a_provider_without_cache_key_isolation_shares_across_prompt_cache_keys():
    """Only providers whose rules say `cache_key_isolates` split entries by the client's key:
    DeepSeek has no such rule, so a Codex subagent (its own prompt_cache_key) reads what the main
    thread left (the 64-token interval units inside its 1,000-token system prompt: 960)."""
    lab = CacheLab("deepseek", V4, client="codex")
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 100)], at=0)
    sub = lab.send([system, lab.block("user", 100)], at=10, thread="agent-1")
    assert sub.split == (960, 0, 0, 140)


def test_requests_with_and_without_markers_each_get_their_mode_rules():
    """Qwen: a request with cache markers follows the `explicit` variant, one without them the
    implicit rules, in any order within one run (the router memoizes a rule book per mode)."""
    lab = CacheLab("qwen", "qwen-plus", client="none")
    lab.pricer = _override_pricer("qwen-plus")
    head = [lab.block("system", 1500), lab.block("user", 100)]
    plain = lab.send(head, at=0, breakpoints=[])
    assert plain.outcome.mechanism == "automatic-prefix"
    marked = lab.send(head, at=10, breakpoints=[Breakpoint(1)])
    assert marked.outcome.mechanism == "explicit-breakpoints"
    assert marked.outcome.route == "qwen/explicit"


def test_two_modes_with_one_mechanism_keep_their_own_rules():
    """A user file whose `breakpoints` variant keeps the mechanism but lowers the minimum: a
    marked request is simulated under the variant's minimum, and in the variant's own scope,
    even after an unmarked one."""
    rows = [
        _row(rule="mechanism", value="automatic-prefix"),
        _row(rule="min_cacheable_tokens", value=1024),
        _row(rule="min_cacheable_tokens", value=256, variant="marked"),
        _row(rule="ttl_seconds", value=600),
    ]
    rules = _file(*rows, variants=[{"name": "marked", "when": "breakpoints"}])
    lab = CacheLab("acme", "acme-1", client="none", rules=rules)
    lab.pricer = _override_pricer("acme-1")
    head = [lab.block("system", 300), lab.block("user", 100)]
    lab.send(head, at=0, breakpoints=[])
    assert lab.send(head, at=5, breakpoints=[]).split == (0, 0, 0, 400)  # 400 < 1,024
    # The marked mode is a route of its own (`acme/marked`): it does not share the unmarked
    # requests' entries, and reads its own under its own minimum.
    first = lab.send(head, at=10, breakpoints=[Breakpoint(1)])
    assert first.outcome.route == "acme/marked"
    assert first.split == (0, 0, 0, 400)
    assert lab.send(head, at=15, breakpoints=[Breakpoint(1)]).split == (400, 0, 0, 0)  # ≥ 256


def test_a_router_simulates_in_the_store_it_is_given():
    """`CacheRouter.simulate(sim, store)`: a router asked about another store (a snapshot, a
    fresh one) reads and writes that store, not the one its simulators were first built on."""
    lab = CacheLab("openai", "gpt-5", client="none")
    head = [lab.block("system", 2000), lab.block("user", 100)]
    lab.send(head, at=0)
    assert lab.send(head, at=10).outcome.cache_read == 2048
    lab.store = CacheStore()
    assert lab.send(head, at=20).outcome.cache_read == 0  # the new store is empty
    assert lab.send(head, at=30).outcome.cache_read == 2048  # and holds what r3 wrote


def test_simulator_for_rules_replace_the_builtin_file():
    """`simulator_for(provider, store, rules)`: "`rules` replaces `provider`'s built-in file"."""
    user = _file(_row(), provider="openai")
    bound = simulator_for("openai", CacheStore(), user)
    (only,) = bound.router.layers_for("openai")
    assert only.replace and only.rules == user.rules


def test_simulator_for_a_provider_no_rule_file_serves_is_an_error_at_once():
    """The provider is checked when the simulator is made, not at its first request; a provider
    served only by a variant (aws: anthropic's bedrock) is served."""
    with pytest.raises(ReplayError, match="no cache rules for provider 'acme'"):
        simulator_for("acme", CacheStore())
    assert simulator_for("aws", CacheStore()).router.serves("aws")


def test_a_provider_is_served_in_any_case_and_through_a_variant():
    from replay.cache import CacheRouter

    router = CacheRouter()
    assert router.serves(" OpenAI ") and router.serves("gemini")  # an id in any case, an alias
    assert router.serves("aws")  # named only by anthropic.json's bedrock variant
    assert not router.serves("acme")
    assert router.route(" OpenAI ", "gpt-5").label == "openai"


def test_only_a_provider_variant_serves_the_provider_it_names():
    """A variant serves another provider's requests only with `when: provider`
    (docs/cache-rules.md, "Route"); a mode variant is chosen by the client, whatever provider
    it names."""
    from replay.cache import CacheRouter

    mine = ProviderRules.model_validate({
        "provider": "acme", "reviewed": "2026-11-01",
        "variants": [{"name": "marked", "when": "breakpoints", "provider": "zeta"}],
        "rules": [_row(rule="mechanism", value="automatic-prefix")],
    })
    router = CacheRouter(mine)
    assert router.serves("acme") and not router.serves("zeta")
    with pytest.raises(ReplayError, match="no cache rules for provider 'zeta'"):
        router.route("zeta", "acme-1")


def test_a_user_file_named_by_an_alias_routes_under_the_built_in_provider_id():
    """A user's file layers over the built-in file that serves its provider, an alias included
    (docs/cache-rules.md): its requests are routed, and the providers listed, under the built-in
    file's id."""
    from replay.cache import CacheRouter

    mine = ProviderRules.model_validate({
        "provider": "kimi", "reviewed": "2026-11-01", "rules": [_row(value=600)],
    })
    router = CacheRouter(mine)
    assert router.route("kimi", "kimi-k2").label == "moonshotai"
    assert "moonshotai" in router.providers() and "kimi" not in router.providers()


def test_an_alias_a_user_file_adds_routes_to_the_provider_it_layers_over():
    """`aliases`: other ids that mean this provider (docs/cache-rules.md), a user's file's too."""
    from replay.cache import CacheRouter

    mine = ProviderRules.model_validate({
        "provider": "anthropic", "aliases": ["my-proxy"], "reviewed": "2026-11-01",
        "rules": [_row(value=600)],
    })
    router = CacheRouter(mine)
    assert router.serves("my-proxy")
    assert router.route("my-proxy", "claude-sonnet-4-5").label == "anthropic"


def test_a_provider_variant_matches_the_normalized_model_id():
    # anthropic.json's vertex variant (provider google, models ^claude) sees the model id as
    # rule patterns do: lower case, without its vendor prefix.
    from replay.cache import CacheRouter

    router = CacheRouter()
    assert router.route("google", "anthropic/claude-sonnet-4.5").label == "anthropic/vertex"
    assert router.route("google", "Claude-Sonnet-4-5").label == "anthropic/vertex"
    assert router.route("google", "gemini-2.5-flash").label == "google"


def test_a_provider_variant_without_models_serves_all_the_file_s_models():
    # pricing/cache/_schema.json: a variant's `models` is optional (null by default); without
    # it, a provider variant serves whatever model that provider sends.
    from replay.cache import CacheRouter

    mine = ProviderRules.model_validate({
        "provider": "anthropic", "reviewed": "2026-11-01",
        "variants": [{"name": "azure", "when": "provider", "provider": "azure"}],
    })
    assert CacheRouter(mine).route("azure", "claude-sonnet-4-5").label == "anthropic/azure"


def test_passthrough_routes_ignore_case_and_chain():
    from replay.cache import CacheRouter

    assert CacheRouter().route("openrouter", "OpenAI/GPT-5").label == "openrouter>openai"
    mine = ProviderRules.model_validate({
        "provider": "acme", "reviewed": "2026-11-01",
        "passthrough": [{"models": "^or/", "to": "openrouter"}],
    })
    assert CacheRouter(mine).route("acme", "or/openai/gpt-5").label == "acme>openrouter>openai"


def test_a_passthrough_route_back_to_its_own_provider_ends():
    """A user's file whose passthrough leads back to itself is routed a bounded number of steps,
    not followed until the interpreter's recursion limit."""
    from replay.cache import CacheRouter

    loop = ProviderRules.model_validate({
        "provider": "acme", "reviewed": "2026-11-01",
        "passthrough": [{"models": ".", "to": "acme"}],
        "rules": [_row(rule="mechanism", value="none")],
    })
    route = CacheRouter(loop).route("acme", "a/b/c/d/e/f")
    assert route.label.startswith("acme>") and route.label.count(">") <= 3


def test_one_router_simulates_each_mechanism_with_its_own_simulator():
    # openai.json: gpt-5 is automatic-prefix (no write fee), gpt-5.6 openai-breakpoints (billed
    # writes): the same route and variant, two simulators.
    lab = CacheLab("openai", "gpt-5", client="none")
    assert lab.send([lab.block("system", 2000), lab.block("user", 100)], at=0).split == (
        0, 0, 0, 2100
    )
    r = lab.send([lab.block("system", 2000), lab.block("user", 100)], at=10, model=TERRA)
    assert r.outcome.mechanism == "openai-breakpoints"
    assert r.split == (0, 0, 2100, 0)


def test_builtin_book_reads_the_provider_variant_s_rules():
    # anthropic.json: Fable 5 caches from 512 tokens, from 1,024 on Bedrock (provider aws).
    for provider, minimum in (("anthropic", 512), ("aws", 1024)):
        found = builtin_book(provider, "claude-fable-5")
        assert found is not None
        book, model = found
        assert book.get("min_cacheable_tokens", model, OCT) == minimum, provider


def test_the_outcome_says_whether_the_client_picked_the_ttl():
    # Anthropic: 5m or 1h per breakpoint once the 1-hour TTL exists; OpenAI's rules set it.
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    assert lab.send([lab.block("system", 2000), lab.block("user", 10)], at=0).outcome.ttl_choice
    lab = CacheLab("openai", "gpt-5", client="none")
    r = lab.send([lab.block("system", 2000), lab.block("user", 10)], at=0)
    assert r.outcome.ttl_choice is False


def test_an_explicit_breakpoint_file_without_the_optional_rules_gets_their_defaults():
    """A user rule file for a provider of its own with the explicit-breakpoint mechanism and
    none of the optional rules: the 1h TTL exists (`ttl_1h_available`, docs/cache-rules.md), a
    read refreshes (`refresh_on_read`), there is no top-level automatic marker
    (`automatic_breakpoint`) and thinking is kept (`strips_thinking`)."""
    rows = [_row(rule="mechanism", value="explicit-breakpoints"),
            _row(rule="max_breakpoints", value=4), _row(rule="lookback_positions", value=20),
            _row(rule="min_cacheable_tokens", value=100),
            _row(rule="ttl_seconds_5m", value=300), _row(rule="ttl_seconds_1h", value=3600)]
    lab = CacheLab("acme", "acme-1", client="none", rules=_file(*rows))
    lab.pricer = _override_pricer("acme-1")
    system, u1 = lab.block("system", 300), lab.block("user", 100)
    assert lab.send([system, u1], at=0, breakpoints=[Breakpoint(1, "1h")]).split == (
        0, 400, 0, 0)
    # A 5m entry (300) read through the lookback at 200 s is refreshed: live at 450 s.
    s = lab.block("system", 200)
    lab.send([s, u1], at=0, breakpoints=[Breakpoint(1)])
    two = [s, u1, lab.block("text", 50), lab.block("user", 50)]
    assert lab.send(two, at=200, breakpoints=[Breakpoint(3)]).split == (300, 0, 100, 0)
    three = [s, u1, lab.block("text", 60), lab.block("user", 60)]
    assert lab.send(three, at=450, breakpoints=[Breakpoint(3)]).split == (300, 0, 120, 0)
    # The top-level automatic marker alone caches nothing.
    auto = lab.send([lab.block("system", 500), lab.block("user", 100)], at=500,
                    breakpoints=[Breakpoint(1, automatic=True)])
    assert auto.split == (0, 0, 0, 600)
    # Thinking before a new user turn stays in the prompt.
    ids = [lab.block("system", 300), lab.block("user", 100), lab.block("thinking", 50),
           lab.block("text", 50), lab.block("user", 100)]
    kept = lab.send(ids, at=600, breakpoints=[Breakpoint(4)])
    assert (kept.outcome.dropped_tokens, kept.split) == (0, (0, 0, 600, 0))


# ---------------------------------------------------------------- openai.py (GPT-5.6+)


def test_a_summary_ends_a_message():
    assert eligible_ends(["system", "summary", "text", "user"]) == (0, [0, 1, 3])


def test_the_third_explicit_marker_is_not_among_the_first_two_looked_up():
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    u = [lab.block("user", 10) for _ in range(3)]
    # r1 writes the implicit boundary at u3 (2,030) only.
    lab.send([system, *u], at=0, breakpoints=[])
    more = [lab.block("user", 10) for _ in range(60)]
    # r2 marks all 63 user messages: u3 is the third explicit one, not among the latest 50, and
    # beyond the 20 earlier message ends: not looked up, so nothing is read.
    bps = [Breakpoint(i) for i in range(1, 64)]
    r2 = lab.send([system, *u, *more], at=10, breakpoints=bps)
    assert r2.outcome.cache_read == 0


def _terra(overrides: dict) -> tuple[CacheLab, int, list[int]]:
    lab = CacheLab("openai", TERRA, client="none", overrides=overrides)
    return lab, lab.block("system", 2000), [lab.block("user", 10) for _ in range(3)]


def test_zero_latest_explicit_lookups_look_up_none():
    lab, system, (u1, u2, u3) = _terra({"openai.lookup_latest_explicit": 0,
                                        "openai.lookup_first_explicit": 0,
                                        "openai.lookup_earlier_message_ends": 0})
    lab.send([system, u1, u2], at=0, breakpoints=[])  # implicit entry at u2 (2,020)
    # u2 is marked, but no explicit marker is looked up and no earlier message end either.
    r2 = lab.send([system, u1, u2, u3], at=10, breakpoints=[Breakpoint(2)])
    assert r2.outcome.cache_read == 0


def test_zero_earlier_message_ends_look_up_none():
    lab, system, (u1, u2, u3) = _terra({"openai.lookup_earlier_message_ends": 0})
    lab.send([system, u1, u2], at=0, breakpoints=[])  # implicit entry at u2 (2,020)
    assert lab.send([system, u1, u2, u3], at=10, breakpoints=[]).outcome.cache_read == 0
    lab, system, (u1, u2, u3) = _terra({})
    lab.send([system, u1, u2], at=0, breakpoints=[])
    assert lab.send([system, u1, u2, u3], at=10, breakpoints=[]).outcome.cache_read == 2020


def test_one_write_per_request_is_the_implicit_boundary_only():
    lab, system, (u1, u2, u3) = _terra({"openai.max_writes": 1})
    # Marker on u1, implicit boundary at u2: only u2 is written.
    lab.send([system, u1, u2], at=0, breakpoints=[Breakpoint(1)])
    assert lab.send([system, u1, u3], at=10, breakpoints=[]).outcome.cache_read == 0


def test_at_most_four_writes_implicit_included():
    lab = CacheLab("openai", TERRA, client="none")
    system = lab.block("system", 2000)
    u = [lab.block("user", 10) for _ in range(5)]
    # Markers on u1..u4, implicit at u5: written u5 and the latest 3 markers (u2..u4), not u1.
    lab.send([system, *u], at=0, breakpoints=[Breakpoint(i) for i in range(1, 5)])
    assert lab.send([system, u[0], lab.block("user", 10)], at=10,
                    breakpoints=[]).outcome.cache_read == 0
    assert lab.send([system, *u[:2], lab.block("user", 10)], at=20,
                    breakpoints=[]).outcome.cache_read == 2020


# ---------------------------------------------------------------- deepseek.py (V4)


def test_a_common_prefix_unit_waits_a_second_even_after_a_fast_response():
    lab = CacheLab("deepseek", V4)
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 100)], at=0)
    # r2 (a 0.2 s response) finds the 1,000-token common prefix: its unit is usable from a
    # later request, at least a second later; half a second on, only the interval units (960).
    lab.send([system, lab.block("user", 100)], at=10, duration_s=0.2)
    assert lab.send([system, lab.block("user", 100)], at=10.5).split == (960, 0, 0, 140)
    assert lab.send([system, lab.block("user", 100)], at=11.5).split == (1000, 0, 0, 100)


def test_the_newest_units_are_kept_when_a_scope_holds_too_many():
    lab = CacheLab("deepseek", V4)
    prompts = [[lab.block("system", 100)] for _ in range(MAX_PROMPTS + 6)]
    for n, prompt in enumerate(prompts):
        lab.send(prompt, at=n)
    assert lab.send(prompts[-1], at=len(prompts) + 10).split == (100, 0, 0, 0)


def test_a_quiet_thread_keeps_its_unit_past_the_cap():
    # 64 other threads' units in the scope (a batch of parallel sessions) pushed thread a's out:
    # its next request read nothing, with no cause.
    lab = CacheLab("deepseek", V4)
    mine = [lab.block("system", 1100)]
    lab.send(mine, at=0, thread="a")
    for n in range(MAX_PROMPTS):
        lab.send([lab.block("system", 1100)], at=1 + n, thread=f"t{n}")
    assert lab.send([*mine, lab.block("user", 200)], at=100, thread="a").split == (
        1100, 0, 0, 200)


def test_an_edited_prompt_s_answer_is_no_output_unit():
    """The output unit of the previous request is seen only where the new prompt repeats that
    prompt: after an edit of user 1 (same length), only the interval units inside the shared
    system prompt match (960), not the edited prompt and its answer (1,300)."""
    lab = CacheLab("deepseek", V4)
    system = lab.block("system", 1000)
    lab.send([system, lab.block("user", 100)], at=0)
    edited = [system, lab.block("user", 100), lab.block("text", 200), lab.block("user", 100)]
    assert lab.send(edited, at=10).split == (960, 0, 0, 440)


# ---------------------------------------------------------------- automatic.py


def test_the_newest_prompts_are_kept_when_a_scope_holds_too_many():
    lab = CacheLab("openai", "gpt-5", client="none")
    prompts = [[lab.block("system", 1100)] for _ in range(MAX_PROMPTS + 6)]
    for n, prompt in enumerate(prompts):
        lab.send(prompt, at=n)
    assert lab.send(prompts[-1], at=len(prompts) + 10).outcome.cache_read == 1024  # 128 × 8


def test_a_scope_holds_max_prompts_and_drops_the_oldest_first():
    lab = CacheLab("openai", "gpt-5", client="none")
    prompts = [[lab.block("system", 1100)] for _ in range(MAX_PROMPTS + 1)]
    for n, prompt in enumerate(prompts[:MAX_PROMPTS]):
        lab.send(prompt, at=n)
    # MAX_PROMPTS held: the oldest is still readable (128 × 8 of its 1,100); read again, it
    # becomes the newest, so the next new prompt pushes out the second one instead.
    assert lab.send(prompts[0], at=100).outcome.cache_read == 1024
    lab.send(prompts[MAX_PROMPTS], at=101)
    assert lab.send(prompts[1], at=102).outcome.cache_read == 0


def test_a_full_scope_drops_only_its_single_oldest_prompt():
    # One prompt over MAX_PROMPTS pushes out exactly one, the oldest: the second oldest still
    # reads 128 × 8 of its 1,100 tokens.
    lab = CacheLab("openai", "gpt-5", client="none")
    prompts = [[lab.block("system", 1100)] for _ in range(MAX_PROMPTS + 1)]
    for n, prompt in enumerate(prompts):
        lab.send(prompt, at=n)
    assert lab.send(prompts[1], at=100).outcome.cache_read == 1024
    assert lab.send(prompts[0], at=101).outcome.cache_read == 0


def test_a_quiet_thread_keeps_its_prompt_past_the_cap_until_it_expires():
    # The cap bounds the simulator's memory; a thread's own last prompt is held anyway. Pushed
    # out by 64 other threads' prompts, it was an unnamed miss at the thread's next request.
    def quiet_thread(model: str, back_at: float):
        lab = CacheLab("openai", model, client="none")
        mine = [lab.block("system", 1100)]
        lab.send(mine, at=0, thread="a")
        for n in range(MAX_PROMPTS):
            lab.send([lab.block("system", 1100)], at=1 + n, thread=f"t{n}")
        return lab.send([*mine, lab.block("user", 200)], at=back_at, thread="a").outcome

    assert quiet_thread("gpt-5", 100).cache_read == 1024  # 128 × 8
    # Expired (gpt-4o in memory: 10 min idle), it goes, and the miss still says why.
    late = quiet_thread("gpt-4o", 800)
    assert (late.cache_read, late.miss_kind) == (0, "ttl-expired")


def test_a_prefix_too_short_to_read_does_not_refresh_the_prompt():
    lab = CacheLab("openai", "gpt-4o", client="none")  # in-memory retention: 10 min idle
    system = lab.block("system", 500)
    first = [system, lab.block("user", 1600)]
    lab.send(first, at=0)
    # r2 shares 500 tokens with it: under the 1,024 minimum, nothing read, nothing refreshed.
    assert lab.send([system, lab.block("user", 600)], at=500).outcome.cache_read == 0
    # 700 s after its write, its only use: expired.
    late = lab.send(first, at=700)
    assert late.outcome.cache_read == 0
    assert late.outcome.miss_kind == "ttl-expired"


def test_a_unit_shared_below_the_minimum_is_not_refreshed():
    # As for automatic prompts: a unit nothing was read from is not used. With a 1,024-token
    # minimum, r2 shares 500 of r1's unit (448 in 64-token units): nothing read, so r1's unit
    # still dates from t=0 and, 7,300 s later, is past the 7,200 s TTL.
    lab = CacheLab("deepseek", V4, overrides={"deepseek.min_cacheable_tokens": 1024})
    system, u1 = lab.block("system", 500), lab.block("user", 1600)
    lab.send([system, u1], at=0)
    assert lab.send([system, lab.block("user", 600)], at=5000).outcome.cache_read == 0
    late = lab.send([system, u1, lab.block("user", 100)], at=7300)
    assert (late.outcome.cache_read, late.outcome.miss_kind) == (0, "ttl-expired")


def test_billed_automatic_writes_are_5m_unless_the_rules_say_1h_exists():
    """docs/cache-rules.md: `ttl_1h_available` absent is false for `automatic-prefix`: a client
    asking for 1h gets its writes billed (and kept) as 5m ones."""
    rules = _file(
        _row(rule="mechanism", value="automatic-prefix"),
        _row(rule="min_cacheable_tokens", value=1024),
        _row(rule="bills_writes", value=True),
        _row(rule="ttl_seconds_5m", value=300),
        _row(rule="ttl_seconds_1h", value=3600),
    )
    lab = CacheLab("acme", "acme-1", client="none", rules=rules)
    lab.pricer = _override_pricer("acme-1")
    head = [lab.block("system", 2000), lab.block("user", 100)]
    assert lab.send(head, at=0, breakpoints=[Breakpoint(1, "1h")]).split == (0, 0, 2100, 0)


def test_a_user_passthrough_route_adds_to_the_built_in_ones():
    """docs/cache-rules.md: a user file is layered, the built-in file answers the rest. A user
    OpenRouter file with one route of its own took every built-in route away."""
    from replay._errors import ReplayError
    from replay.cache import CacheRouter

    mine = ProviderRules.model_validate({
        "provider": "openrouter", "reviewed": "2026-11-01",
        "passthrough": [{"models": "^mistralai/", "to": "deepseek"}],
    })
    router = CacheRouter(mine)
    assert router.route("openrouter", "anthropic/claude-sonnet-4.5").label == (
        CacheRouter().route("openrouter", "anthropic/claude-sonnet-4.5").label
    ) == "openrouter>anthropic"
    assert router.route("openrouter", "mistralai/mistral-large").label == "openrouter>deepseek"
    with pytest.raises(ReplayError, match=r"routes: \^mistralai/ → deepseek, .*anthropic"):
        router.route("openrouter", "nobody/model-x")


def test_a_rebased_prompt_parting_inside_its_anchor_shares_only_that_much():
    # Thread main's first prompt, after the thread rewrote its user turn, is held as the blocks
    # it shares with the newer prompt (the system prompt) plus its own tail. A request that
    # parts from both at the very first block shares nothing with it, even though its second
    # block is that tail's first: 0 read (system blocks differ), not 2,000 + 1,100.
    lab = CacheLab("openai", "gpt-5", client="none")
    system, u1 = lab.block("system", 2000), lab.block("user", 1100)
    lab.send([system, u1], at=0)
    lab.send([system, lab.block("user", 1100)], at=1)  # the rewrite: [system, u1] rebased
    lab.send([lab.block("system", 500), lab.block("user", 100)], at=2, thread="b")
    r = lab.send([lab.block("system", 2000), u1], at=3, thread="c")
    assert r.outcome.cache_read == 0
