"""Provider prompt-cache simulation: dated rules, one simulator per mechanism, client profiles.

The engine builds one `CacheRouter` per replay run and calls `router.simulate(SimRequest,
store)` for each request; the router picks the provider's rules (docs/cache-rules.md) and the
mechanism in force at the request's date, and returns the request's `CacheOutcome`.
"""

from replay.cache._base import (
    MISS_KINDS,
    Breakpoint,
    CacheOutcome,
    CacheSimulator,
    PromptView,
    SimRequest,
    prompt_view,
)
from replay.cache._clients import AGENT_PROFILES, PROFILES, ClientProfile, profile_for
from replay.cache._describe import rules_in_force
from replay.cache._route import (
    MECHANISM_SIMULATORS,
    CacheRouter,
    NoCacheSimulator,
    Route,
    normalize_model,
    simulator_for,
)
from replay.cache._rules import (
    MECHANISMS,
    RULE_TYPES,
    Passthrough,
    ProviderRules,
    Rule,
    RuleBook,
    Variant,
    all_builtin_rules,
    builtin_rule_files,
    builtin_rules,
    json_schema,
    json_schema_text,
    load_rules_file,
    rows_in_force,
)
from replay.cache._store import CachedPrompt, CacheStore, Entry
from replay.cache.anthropic import AnthropicSimulator
from replay.cache.automatic import AutomaticPrefixSimulator
from replay.cache.deepseek import DeepSeekUnitSimulator
from replay.cache.gemini import GeminiExplicitSimulator
from replay.cache.openai import OpenAIBreakpointSimulator

SIMULATORS = MECHANISM_SIMULATORS
"""Mechanism name → simulator class."""

__all__ = [
    "AGENT_PROFILES",
    "MECHANISMS",
    "MECHANISM_SIMULATORS",
    "MISS_KINDS",
    "PROFILES",
    "RULE_TYPES",
    "SIMULATORS",
    "AnthropicSimulator",
    "AutomaticPrefixSimulator",
    "Breakpoint",
    "CacheOutcome",
    "CacheRouter",
    "CacheSimulator",
    "CacheStore",
    "CachedPrompt",
    "ClientProfile",
    "DeepSeekUnitSimulator",
    "Entry",
    "GeminiExplicitSimulator",
    "NoCacheSimulator",
    "OpenAIBreakpointSimulator",
    "Passthrough",
    "PromptView",
    "ProviderRules",
    "Route",
    "Rule",
    "RuleBook",
    "SimRequest",
    "Variant",
    "all_builtin_rules",
    "builtin_rule_files",
    "builtin_rules",
    "json_schema",
    "json_schema_text",
    "load_rules_file",
    "normalize_model",
    "profile_for",
    "prompt_view",
    "rows_in_force",
    "rules_in_force",
    "simulator_for",
]
