"""The rules in force at a date, as `replay providers` shows them: each provider's rule files
(a user's layered over the built-in one), and every rule resolved for one model."""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

from replay._errors import ReplayError
from replay._model_ids import normalize_model
from replay.cache._route import CacheRouter
from replay.cache._rules import _MISSING, ProviderRules, Rule, load_rules_file, rows_in_force


def _rule_row(r: Rule) -> dict[str, Any]:
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


def _provider_doc(layers: tuple[ProviderRules, ...], at: date) -> dict[str, Any]:
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


def _resolved(router: CacheRouter, provider: str, model: str, at: date) -> dict[str, Any]:
    """Every rule's value for one model at `at`, as the simulator will read it."""
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
    patterns = [p for f in route.layers for p in f.models]
    return {
        "provider": provider,
        "model": model,
        "route": route.label,
        "rules_model": route.rules_model,
        # A model the file names no family of (Claude asked of openai) is resolved all the
        # same, by the file's general rows: said, since its requests would not go there.
        "covered": not patterns or any(re.search(p, route.rules_model) for p in patterns),
        "model_patterns": patterns,
        "rules": rows,
    }


def _provider_by_family(router: CacheRouter, model: str) -> str | None:
    """The one provider whose rule files name a model family `model` belongs to (`^qwen`:
    Qwen, which genai-prices does not know), or None when none or several do."""
    normalized = normalize_model(model)
    found = {
        layers[-1].provider
        for layers in router.rule_files
        for f in layers
        for pattern in f.models
        if re.search(pattern, normalized)
    }
    return found.pop() if len(found) == 1 else None


def rules_in_force(
    at: date,
    provider: str | None = None,
    model: str | None = None,
    cache_rules: str | Path | None = None,
) -> dict[str, Any]:
    """The cache rules in force on `at`: every provider's, or only `provider`'s (id or alias),
    each row with its source and date; with `model`, also every rule resolved for it (its
    provider guessed from the model when not given). `cache_rules`: a user's rule file,
    layered over the built-in ones."""
    router = CacheRouter(load_rules_file(cache_rules) if cache_rules else None)
    files = router.rule_files
    if model is not None and provider is None:
        from replay.prices import provider_for_model

        # Only the provider the model resolves to, not every provider's rules before its own.
        try:
            provider = provider_for_model(model)
        except ReplayError:  # its hint (a --price) is no option of this command
            provider = _provider_by_family(router, model)
            if provider is None:
                raise ReplayError(
                    f"cannot tell which provider serves model {model!r}; name it with --provider"
                ) from None
    if provider is not None:
        files = _files_serving(router, provider, model)
    document: dict[str, Any] = {
        "at": at.isoformat(),
        "providers": [_provider_doc(layers, at) for layers in files],
    }
    if model is not None and provider is not None:  # (given a model, the provider is known)
        document["resolved"] = _resolved(router, provider, model, at)
    return document


def _files_serving(
    router: CacheRouter, provider: str, model: str | None
) -> list[tuple[ProviderRules, ...]]:
    """The rule files that serve `provider` (id or alias). With a model: the provider's own file,
    else the one the model routes to. Without: its own file, then the files with a variant for
    it (`aws` has no file: Claude on Bedrock is a variant of anthropic's)."""
    key = provider.strip().lower()
    own = router.layers_for(key)
    if model is not None:
        # The file the model's requests follow (Claude on Google: anthropic's `vertex`
        # variant), not the provider's own when it routes the model elsewhere.
        try:
            return [router.route(provider, model).layers]
        except ReplayError:
            if own is not None:
                return [own]
            raise _unknown(router, provider, model) from None
    found = [own] if own is not None else []
    found += [f for f in router.rule_files if f is not own and _has_variant_for(f, key)]
    if not found:
        raise _unknown(router, provider)
    return found


def _has_variant_for(layers: tuple[ProviderRules, ...], provider: str) -> bool:
    return any(v.when == "provider" and v.provider == provider for f in layers for v in f.variants)


def _unknown(router: CacheRouter, provider: str, model: str | None = None) -> ReplayError:
    """No rules for `provider` (or for `model` there): the providers known, and those that a
    variant serves for some models."""
    variants = [
        f"{v.provider} ({layers[-1].provider}/{v.name}, models {v.models or 'all'})"
        for layers in router.rule_files
        for f in layers
        for v in f.variants
        if v.when == "provider" and v.provider
    ]
    what = f"no cache rules for model {model!r}" if model is not None else "no cache rules"
    return ReplayError(
        f"provider {provider!r}: {what}; known: {', '.join(router.providers())}"
        + (f"; variants: {', '.join(variants)}" if variants else "")
    )


__all__ = ["rules_in_force"]
