"""Model ids as the rule tables see them (cache rules, tokenizer families): one normal form for
the many spellings a provider route gives one model."""

from __future__ import annotations

import re

_BEDROCK_PREFIX = re.compile(r"^(?:global|regional|us|eu|apac|au|jp|ca|us-gov)\.")


def normalize_model(model: str) -> str:
    """A model id as rule patterns see it: lower case, no `vendor/` prefix, no Bedrock region or
    version decorations, no date or `-latest` suffix, Claude versions with dashes
    (`anthropic/claude-sonnet-4.5` and `global.anthropic.claude-sonnet-4-5-20250929-v1:0` are
    both `claude-sonnet-4-5`)."""
    m = model.strip().lower()
    m = m.rsplit("/", 1)[-1]
    m = _BEDROCK_PREFIX.sub("", m)
    m = re.sub(r"^anthropic\.", "", m)
    m = re.sub(r"-v\d+(?::\d+)?$", "", m)
    m = re.sub(r":[a-z0-9.-]*$", "", m)
    m = re.sub(r"@\d{8}$", "", m)
    m = re.sub(r"-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)$", "", m)
    if m.startswith("claude"):
        m = re.sub(r"(\d)\.(\d)", r"\1-\2", m)
    return m
