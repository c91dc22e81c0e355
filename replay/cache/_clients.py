"""Client behaviour profiles: where a harness puts its cache breakpoints, with which TTL, and
which cache key (scope) it sends.

Logs rarely say where breakpoints were, so the profile is chosen from the log's agent
(`SessionHeader.agent`, and `agent_version` where the behaviour changed) and can be overridden
with `--client`. Automatic-prefix providers ignore breakpoints; explicit-breakpoint providers
(Anthropic, Bedrock, Vertex, Qwen explicit) cache nothing without them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from replay._errors import ReplayError
from replay.cache._base import Breakpoint, Ttl, conversation_lane
from replay.log import MAIN_THREAD
from replay.render import RenderedRequest

Placement = Callable[[RenderedRequest], list[int]]


# Block positions come from the request's `KindIndex` (kept by the renderer as it appends
# blocks): no walk over the prompt per request.


def _found(block: int) -> int | None:
    return None if block < 0 else block


def _head_end(req: RenderedRequest) -> int | None:
    """Last block of the tools + system prompt (they open the prompt)."""
    return _found(req.kind_index.head_end)


def _last_message_block(req: RenderedRequest) -> int | None:
    """Last content block of the prompt that may carry a marker (not thinking)."""
    return _found(req.kind_index.last_non_thinking)


def _last_user_block(req: RenderedRequest) -> int | None:
    """Last block of the last user-role message (a user turn or tool results)."""
    return _found(req.kind_index.last_user_role)


def system_and_last(req: RenderedRequest) -> list[int]:
    return sorted({b for b in (_head_end(req), _last_message_block(req)) if b is not None})


def system_and_last_user(req: RenderedRequest) -> list[int]:
    return sorted({b for b in (_head_end(req), _last_user_block(req)) if b is not None})


def head_only(req: RenderedRequest) -> list[int]:
    head = _head_end(req)
    return [] if head is None else [head]


def nothing(req: RenderedRequest) -> list[int]:
    return []


def _version(text: str | None) -> tuple[int, ...] | None:
    if not text:
        return None
    m = re.match(r"\D*(\d+)(?:\.(\d+))?(?:\.(\d+))?", text)
    return tuple(int(g) for g in m.groups() if g is not None) if m else None


@dataclass(frozen=True)
class ClientProfile:
    """How one harness asks for caching."""

    name: str
    description: str
    place: Placement = nothing
    """Blocks that carry an explicit `cache_control` marker."""
    automatic: bool = False
    """Sends the top-level automatic `cache_control` (Anthropic) instead of / besides markers."""
    main_ttl: Ttl = "5m"
    """TTL it asks for on the main thread."""
    other_ttl: Ttl = "5m"
    """TTL it asks for on subagent threads."""
    cache_key: str | None = None
    """`conversation`: sends the thread's conversation id as `prompt_cache_key`."""
    variants: tuple[str, ...] = ()
    """Rule variants it opts into (e.g. `explicit` = Gemini cachedContents)."""
    source: str = ""
    agent_version: str | None = None
    """Version of the harness the profile was bound to (from the log header)."""
    since_version: tuple[tuple[str, str], ...] = ()
    """(minimum version, field=value) changes, e.g. (("2.1", "main_ttl=1h"),)."""

    def bind(self, agent_version: str | None) -> ClientProfile:
        """This profile as it behaves at `agent_version` (unknown version: the base values)."""
        bound = replace(self, agent_version=agent_version)
        have = _version(agent_version)
        if have is None:
            return bound
        for minimum, change in self.since_version:
            if have >= (_version(minimum) or ()):
                key, _, value = change.partition("=")
                bound = replace(bound, **{key: value})
        return bound

    def ttl(self, thread: str) -> Ttl:
        thread_name = conversation_lane(thread).rpartition("|")[2]
        return self.main_ttl if thread_name == MAIN_THREAD else self.other_ttl

    def breakpoints(self, req: RenderedRequest, thread: str) -> list[Breakpoint]:
        """Breakpoints for a request of a thread (ignored by automatic-prefix providers)."""
        if not len(req.block_ids):
            return []
        ttl = self.ttl(thread)
        marks = [Breakpoint(b, ttl) for b in self.place(req)]
        if self.automatic:
            marks.append(Breakpoint(len(req.block_ids) - 1, ttl, automatic=True))
        return marks

    def key_for(self, thread: str, session_id: str = "") -> str | None:
        """The `prompt_cache_key` it sends for a request of `thread`, if any."""
        if self.cache_key != "conversation":
            return None
        lane = conversation_lane(thread)
        return f"{session_id}:{lane}" if session_id else lane


PROFILES: dict[str, ClientProfile] = {
    p.name: p
    for p in (
        ClientProfile(
            "claude-code",
            "Claude Code: markers on the system prompt and the last message; 5m TTL, 1h on the "
            "main thread from 2.1 (unknown version: 5m)",
            place=system_and_last,
            since_version=(("2.1", "main_ttl=1h"),),
            source="project issue 3 (1h TTL on the main thread in Claude Code 2.1.x)",
        ),
        ClientProfile(
            "pi",
            "pi (pi-ai): markers on the system prompt and the last user-role message, 5m TTL",
            place=system_and_last_user,
            source="project issue 3 (system + last user message)",
        ),
        ClientProfile(
            "codex",
            "Codex: no markers; prompt_cache_key = the conversation (thread) id",
            cache_key="conversation",
            source="project issue 3 (prompt_cache_key = conversation)",
        ),
        ClientProfile(
            "default",
            "unknown harness: markers on the system prompt and the last message, 5m TTL",
            place=system_and_last,
        ),
        ClientProfile(
            "automatic",
            "Anthropic top-level automatic cache_control only (last cacheable block), 5m TTL",
            automatic=True,
        ),
        ClientProfile(
            "gemini-explicit",
            "a Gemini cachedContents resource holding the tools and system prompt (explicit "
            "caching with storage billed per token-hour); a marker after the system prompt "
            "elsewhere",
            place=head_only,
            variants=("explicit",),
        ),
        ClientProfile(
            "none",
            "no cache markers and no cache key (nothing is cached on Anthropic)",
        ),
    )
}

AGENT_PROFILES = {
    "claude-code": "claude-code",
    "claude_code": "claude-code",
    "pi": "pi",
    "codex": "codex",
}
"""Log agent → profile; any other agent (opencode, replay-recorder, unknown…) gets `default`."""


def profile_for(
    agent: str, override: str | None = None, agent_version: str | None = None
) -> ClientProfile:
    name = AGENT_PROFILES.get((agent or "").lower(), "default") if override is None else override
    if name not in PROFILES:
        raise ReplayError(f"unknown client profile {name!r}; known: {', '.join(PROFILES)}")
    return PROFILES[name].bind(agent_version)


__all__ = ["AGENT_PROFILES", "PROFILES", "ClientProfile", "profile_for"]
