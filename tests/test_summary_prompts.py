"""Summary prompts are this project's own wording, needed only for their size: the tail of a
summarizer request, billed as input. Where the research gives the harness prompt's size, the
own wording is within a tenth of it. The literal strings a harness inserts into the context are
its own, word for word."""

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
        # Codex's templates/compact/prompt.md @928a707f and opencode v1's compaction prompt,
        # both quoted whole in the research: 147 and 250 tokens with o200k.
        ("CODEX_INSTRUCTION", "gpt-4o", 147),
        ("OPENCODE_V1_INSTRUCTION", "gpt-4o", 250),
    ],
)
def test_a_summary_prompt_is_as_long_as_the_harness_prompt(
    name: str, model: str, harness_tokens: int
) -> None:
    size = counter_for(model).count(getattr(_prompts, name))
    assert abs(size - harness_tokens) <= harness_tokens / 10


# The research appendix's text of each string a harness inserts word for word (its `{S}`, `{n}`,
# `{N}`… written as the names the strategies fill in).
_CODEX_PREFIX = (
    "You are resuming an in-progress task after context compaction. Another language model "
    "produced a handoff summary. Treat the summary as authoritative for what is already done. "
    'Continue from the "Next steps" for the active task; do not re-open completed tasks or audit '
    "prior work unless the user explicitly asked. You also have access to the state of the tools "
    "that were used by that language model. Here is the summary:"
)
_CLINE_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal "
    "context window length. The initial user task has been retained for continuity, while "
    "intermediate conversation history has been removed. Keep this in mind as you continue "
    "assisting the user. Pay special attention to the user's latest messages."
)
_CLINE_DUP_READ = (
    "[[NOTE] This file read has been removed to save space in the context window. Refer to the "
    "latest file read for the most up to date version of this file.]"
)
_GOOSE_CONTINUATION = (
    "Your context was compacted. The previous message contains a summary of the conversation so "
    "far.\nDo not mention that you read a summary or that conversation summarization occurred.\n"
    "Continue calling tools as necessary to complete the task."
)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("LITERAL_CLEARED", "[Old tool result content cleared]"),
        ("LITERAL_CODEX_SUMMARY_PREFIX", _CODEX_PREFIX),
        ("LITERAL_CODEX_NO_SUMMARY", "(no summary available)"),
        ("LITERAL_OPENCODE_CONTINUE", "Continue if you have next steps, or stop and ask for "
         "clarification if you are unsure how to proceed."),
        ("LITERAL_PI_SUMMARY", "The conversation history before this point was compacted into "
         "the following summary:\n\n<summary>\n{summary}\n</summary>"),
        ("LITERAL_CLAUDE_CONTINUATION", "This session is being continued from a previous "
         "conversation that ran out of context. The summary below covers the earlier portion of "
         "the conversation."),
        ("LITERAL_OPENHANDS_MASKED", "<MASKED>"),
        ("LITERAL_OPENHANDS_BROWSER", "Visited URL {url}\nContent omitted"),
        ("LITERAL_OPENHANDS_NO_SUMMARY", "No events summarized"),
        ("LITERAL_SWE_OMITTED", "Old environment output: ({lines} lines omitted)"),
        ("LITERAL_AIDER_PREFIX", "I spoke to you previously about a number of things.\n"),
        ("LITERAL_AIDER_OK", "Ok."),
        ("LITERAL_CLINE_NOTICE", _CLINE_NOTICE),
        ("LITERAL_CLINE_DUP_READ", _CLINE_DUP_READ),
        ("LITERAL_GEMINI_ACK", "Got it. Thanks for the additional context!"),
        ("LITERAL_GEMINI_MASK", "<tool_output_masked>\n{head}\n... [TRUNCATED] ...\n{tail}\n\n"
         "Output too large. Full output available at: {path}\n</tool_output_masked>"),
        ("LITERAL_GOOSE_CONTINUATION", _GOOSE_CONTINUATION),
        ("LITERAL_GOOSE_PAIR_PREFIX", "[Historical tool call summary]"),
        ("LITERAL_OPENCLAW_TRIM_NOTE", "\n\n[Tool result trimmed: kept first {head} chars and "
         "last {tail} chars of {total} chars.]"),
    ],
)
def test_a_literal_string_is_the_harness_s_word_for_word(name: str, text: str) -> None:
    """A placeholder or wrapper a harness inserts into the context is reproduced exactly (an
    edit to one would change every request that holds it)."""
    assert getattr(_prompts, name) == text
