"""Provider prompt-cache simulation: dated rules, one simulator per provider, client profiles."""

from replay._errors import ReplayError
from replay.cache._base import Breakpoint, CacheOutcome, CacheSimulator, SimRequest
from replay.cache._clients import PROFILES, ClientProfile, profile_for
from replay.cache._rules import (
    ProviderRules,
    Rule,
    RuleBook,
    all_builtin_rules,
    builtin_rules,
    load_rules_file,
)
from replay.cache._store import CacheStore, Entry
from replay.cache.anthropic import AnthropicSimulator
from replay.cache.openai import AutomaticPrefixSimulator

SIMULATORS: dict[str, type[CacheSimulator]] = {
    "anthropic": AnthropicSimulator,
    "openai": AutomaticPrefixSimulator,
    "google": AutomaticPrefixSimulator,
}


def simulator_for(provider: str, store: CacheStore, rules: ProviderRules | None = None,
                  overrides: dict | None = None) -> CacheSimulator:
    """The simulator for `provider`, reading its rules from `pricing/cache/` unless given."""
    cls = SIMULATORS.get(provider)
    if cls is None:
        raise ReplayError(
            f"no cache simulator for provider {provider!r}; known: {', '.join(SIMULATORS)}"
        )
    return cls(RuleBook(rules or builtin_rules(provider), overrides), store)


__all__ = [
    "PROFILES",
    "SIMULATORS",
    "AnthropicSimulator",
    "AutomaticPrefixSimulator",
    "Breakpoint",
    "CacheOutcome",
    "CacheSimulator",
    "CacheStore",
    "ClientProfile",
    "Entry",
    "ProviderRules",
    "Rule",
    "RuleBook",
    "SimRequest",
    "all_builtin_rules",
    "builtin_rules",
    "load_rules_file",
    "profile_for",
    "simulator_for",
]
