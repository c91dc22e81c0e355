"""The record types of each native format, one list per format: its reader takes them and
detection counts them, so a type added for the reader is one detection knows too (detection
imports this module alone, not the readers)."""

from __future__ import annotations

CLAUDE_CODE_CONVERSATION = frozenset({"user", "assistant", "system", "attachment", "progress"})
"""Claude Code's record types that live in the uuid chain."""

CLAUDE_CODE_METADATA = frozenset({
    "summary",  # <= 1.0.x session title {summary, leafUuid}
    "file-history-snapshot",
    "queue-operation",
    "last-prompt",
    "ai-title",
    "custom-title",
    "mode",
    "permission-mode",
    "agent-name",
    "pr-link",
    "worktree-state",
    "atis-latch",
    "tag",
    "agent-setting",
    "marble-origami-commit",
    "marble-origami-snapshot",
    "content-replacement",
})
"""Claude Code's metadata records, with no effect on any prompt (listed so they are not
reported as unknown)."""

CODEX_LINE_TYPES = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)
"""A Codex rollout's line types (each line's `payload` is the record)."""

PI_ENTRY_TYPES = frozenset({
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
})
"""A pi session's entry types after its `session` header."""
