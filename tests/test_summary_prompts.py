"""Summary prompts are this project's own wording, needed only for their size: the tail of a
summarizer request, billed as input. Where the research gives the harness prompt's size, the
own wording is within a tenth of it."""

from __future__ import annotations

import pytest

from replay.strategies import _prompts
from replay.tokens._counter import counter_for


@pytest.mark.parametrize(
    ("name", "model", "harness_tokens"),
    [
        # Piebald-AI's extraction of the conversation-summarization prompt: ≈1121 tokens.
        ("CLAUDE_CODE_INSTRUCTION", "claude-sonnet-4-5", 1121),
        # pi's summarizer system prompt + SUMMARIZATION_PROMPT, quoted whole in the research:
        # 57 + 197 tokens with o200k.
        ("PI_INSTRUCTION", "gpt-4o", 254),
    ],
)
def test_a_summary_prompt_is_as_long_as_the_harness_prompt(
    name: str, model: str, harness_tokens: int
) -> None:
    size = counter_for(model).count(getattr(_prompts, name))
    assert abs(size - harness_tokens) <= harness_tokens / 10
