"""Rule lookups, routing and simulator edges that no other test pinned. Each test here failed on a
deliberate one-line bug (a `>` for a `>=`, a guard or a cache key dropped, a slice taken from the
wrong end) that the rest of the suite let through (mutation audit of the cache rules, router,
GPT-5.6, DeepSeek V4 and automatic-prefix simulators).
Split = (read, 1h write, 5m write, uncached)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from replay.cache import ProviderRules, RuleBook, builtin_rules, rows_in_force

OCT = datetime(2026, 10, 20, 12, tzinfo=UTC)


def _row(**kw) -> dict:
    return {"rule": "ttl_seconds", "value": 300, "since": "2026-01-01", "source": "https://x", **kw}


def _file(*rows: dict, **kw) -> ProviderRules:
    return ProviderRules.model_validate(
        {"provider": "acme", "reviewed": "2026-11-01", "rules": list(rows), **kw}
    )


# ---------------------------------------------------------------- _rules.py


def test_a_zero_decimal_rule_value_is_valid():
    # "a non-negative decimal string": zero is one (a free storage tier, a 0 multiplier).
    rules = _file(_row(rule="storage_usd_per_mtok_hour", value="0"))
    assert RuleBook(rules).get("storage_usd_per_mtok_hour", "m", OCT) == "0"


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
