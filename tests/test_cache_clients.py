"""Client behaviour profiles: chosen from the log's agent (and version), overridable, and where
each puts its breakpoints, TTLs and cache key."""

from __future__ import annotations

import pytest

from replay._errors import ReplayError
from replay.cache import PROFILES, ClientProfile, profile_for
from replay.cache.testing import CacheLab


def test_profile_from_the_logs_agent():
    assert profile_for("claude-code").name == "claude-code"
    assert profile_for("codex").name == "codex"
    assert profile_for("pi").name == "pi"
    for agent in ("opencode", "replay-recorder", "unknown", ""):
        assert profile_for(agent).name == "default"
    assert profile_for("claude-code", "none").name == "none"
    assert profile_for("Claude-Code").name == "claude-code"
    assert profile_for("claude_code").name == "claude-code"
    with pytest.raises(ReplayError, match="unknown client profile 'nope'"):
        profile_for("pi", "nope")
    with pytest.raises(ReplayError, match="unknown client profile ''; known: claude-code, pi"):
        profile_for("pi", "")
    assert set(PROFILES) == {"claude-code", "pi", "codex", "default", "automatic",
                             "gemini-explicit", "none"}


@pytest.mark.parametrize(
    ("version", "main_ttl"),
    [("2.1.14", "1h"), ("2.1.0", "1h"), ("2.1", "1h"), ("v2.3", "1h"), ("3.0.0", "1h"),
     ("2.0.77", "5m"), ("1.0.0", "5m"), (None, "5m"), ("unknown", "5m")],
)
def test_claude_code_uses_1h_on_the_main_thread_from_2_1(version, main_ttl):
    profile = profile_for("claude-code", agent_version=version)
    assert profile.agent_version == version  # the version it was bound to
    assert profile.ttl("main") == main_ttl
    assert profile.ttl("main/summarizer") == main_ttl
    assert profile.ttl("agent-7") == "5m"
    # `replay batch`: each session's threads are lanes of their own (`chain|session|thread`)
    assert profile.ttl("c1|s1|main") == main_ttl
    assert profile.ttl("c1|s1|main/summarizer") == main_ttl
    assert profile.ttl("c1|s1|agent-7") == "5m"
    # A strategy name may hold a slash (a bracket value): the lane is still the thread's.
    named = "s0|opencode-prune-40k-20k[protected=mcp/fs]|"
    assert profile.ttl(named + "main") == main_ttl
    assert profile.ttl(named + "main/summarizer") == main_ttl
    assert profile.ttl(named + "agent-7") == "5m"


def test_a_change_since_a_three_part_version_compares_the_patch_number():
    p = ClientProfile("mine", "1h from 2.1.5", since_version=(("2.1.5", "main_ttl=1h"),))
    assert [p.bind(v).ttl("main") for v in ("2.1.4", "2.1.5", "v2.1.10", "2.2")] == [
        "5m", "1h", "1h", "1h"]


def _request(lab: CacheLab):
    tool, system = lab.block("tool", 10), lab.block("system", 10)
    user, text = lab.block("user", 10), lab.block("text", 10)
    think = lab.block("thinking", 10)
    call, result = lab.block("tool_call", 10, joins=True), lab.block("tool_result", 10)
    return lab.request([tool, system, user, think, text, call, result, lab.block("thinking", 5)],
                       at=0)


def test_breakpoint_placement():
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    req = _request(lab)
    # blocks: 0 tool, 1 system, 2 user, 3 thinking, 4 text, 5 tool_call, 6 tool_result,
    # 7 thinking
    cc = profile_for("claude-code", agent_version="2.1.0")
    assert [(b.block, b.ttl) for b in cc.breakpoints(req, "main")] == [(1, "1h"), (6, "1h")]
    assert [(b.block, b.ttl) for b in cc.breakpoints(req, "agent-1")] == [(1, "5m"), (6, "5m")]
    assert [b.block for b in profile_for("pi").breakpoints(req, "main")] == [1, 6]
    assert profile_for("codex").breakpoints(req, "main") == []
    assert profile_for("x", "none").breakpoints(req, "main") == []
    auto = profile_for("x", "automatic").breakpoints(req, "main")
    assert [(b.block, b.automatic) for b in auto] == [(7, True)]
    assert [b.block for b in profile_for("x", "gemini-explicit").breakpoints(req, "main")] == [1]


def test_pi_marks_the_last_user_role_message_not_the_last_block():
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    req = lab.request([lab.block("system", 10), lab.block("user", 10), lab.block("text", 10)],
                      at=0)
    assert [b.block for b in profile_for("pi").breakpoints(req, "main")] == [0, 1]
    assert [b.block for b in profile_for("x").breakpoints(req, "main")] == [0, 2]
    assert [b.block for b in profile_for("claude-code").breakpoints(req, "main")] == [0, 2]


def test_a_block_carries_one_marker_and_markers_follow_the_prompt():
    """docs/cache-rules.md: markers on the last system block and the last message; a prompt
    that is only its system prompt has one marked block, a prompt without one has no system
    marker (and gemini-explicit no cachedContents), an empty one none at all."""
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    head_only = lab.request([lab.block("tool", 10), lab.block("system", 10)], at=0)
    for name in ("claude-code", "pi", "default", "gemini-explicit"):
        assert [b.block for b in profile_for("x", name).breakpoints(head_only, "main")] == [1]
    no_head = lab.request([lab.block("user", 10), lab.block("text", 10)], at=0)
    assert profile_for("x", "gemini-explicit").breakpoints(no_head, "main") == []
    assert [b.block for b in profile_for("x").breakpoints(no_head, "main")] == [1]
    empty = lab.request([], at=0)
    for name in PROFILES:
        assert profile_for("x", name).breakpoints(empty, "main") == [], name
    # system prompt at block 1, last message at block 8: listed in prompt order
    long = lab.request([lab.block("tool", 10), lab.block("system", 10),
                        *(lab.block("user", 10) for _ in range(7))], at=0)
    assert [b.block for b in profile_for("x").breakpoints(long, "main")] == [1, 8]
    assert [b.block for b in profile_for("pi").breakpoints(long, "main")] == [1, 8]


def test_the_automatic_marker_asks_for_the_profile_s_ttl():
    lab = CacheLab("anthropic", "claude-sonnet-4-5")
    req = lab.request([lab.block("system", 10), lab.block("user", 10)], at=0)
    mine = ClientProfile("mine", "automatic, 1h on the main thread", automatic=True,
                         main_ttl="1h")
    assert [(b.block, b.ttl, b.automatic) for b in mine.breakpoints(req, "main")] == [
        (1, "1h", True)
    ]
    assert [b.ttl for b in mine.breakpoints(req, "agent-1")] == ["5m"]
    # with markers of its own too: the automatic one (on the last block) comes last
    both = ClientProfile("both", "a marker on block 0, and automatic", place=lambda r: [0],
                         automatic=True)
    assert [(b.block, b.automatic) for b in both.breakpoints(req, "main")] == [
        (0, False), (1, True)
    ]


def test_codex_cache_key_is_the_conversation():
    codex = profile_for("codex")
    assert codex.key_for("main", "s1") == "s1:main"
    assert codex.key_for("main/summarizer", "s1") == "s1:main"
    assert codex.key_for("agent-2", "s1") == "s1:agent-2"
    assert codex.key_for("main/summarizer") == "main"  # no session id: the thread alone
    named = "s0|opencode-prune-40k-20k[protected=mcp/fs]|"  # a batch lane, a slash in its name
    assert codex.key_for(named + "main/summarizer", "s1") == f"s1:{named}main"
    assert codex.key_for(named + "agent-2", "s1") == f"s1:{named}agent-2"
    assert profile_for("claude-code").key_for("main", "s1") is None
