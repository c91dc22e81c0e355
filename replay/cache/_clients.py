"""Client behaviour profiles: where a harness puts its cache breakpoints and which scope it uses.

Logs rarely say where breakpoints were, so the profile is chosen from the log's agent and can be
overridden with `--client`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from replay.cache._base import Breakpoint, Ttl
from replay.render import RenderedRequest


def _last_system_block(req: RenderedRequest) -> int | None:
    idx = [i for i, k in enumerate(req.kinds) if k in ("system", "tool")]
    return idx[-1] if idx else None


def _system_and_last(ttl: Ttl) -> Callable[[RenderedRequest, str], list[Breakpoint]]:
    def place(req: RenderedRequest, thread: str) -> list[Breakpoint]:
        if not len(req.block_ids):
            return []
        marks = {len(req.block_ids) - 1}
        head = _last_system_block(req)
        if head is not None:
            marks.add(head)
        return [Breakpoint(b, ttl) for b in sorted(marks)]

    return place


def _system_and_last_user(req: RenderedRequest, thread: str) -> list[Breakpoint]:
    marks = set()
    head = _last_system_block(req)
    if head is not None:
        marks.add(head)
    users = [i for i, k in enumerate(req.kinds) if k in ("user", "tool_result", "summary")]
    if users:
        marks.add(users[-1])
    return [Breakpoint(b) for b in sorted(marks)]


@dataclass(frozen=True)
class ClientProfile:
    """How one harness asks for caching."""

    name: str
    description: str
    breakpoints: Callable[[RenderedRequest, str], list[Breakpoint]]
    """Breakpoints for a request of a thread (ignored by automatic-prefix providers)."""


def _none(req: RenderedRequest, thread: str) -> list[Breakpoint]:
    return []


PROFILES: dict[str, ClientProfile] = {
    p.name: p
    for p in (
        ClientProfile(
            "default",
            "breakpoints on the system prompt and the last message, 5-minute TTL",
            _system_and_last("5m"),
        ),
        ClientProfile(
            "pi",
            "pi-ai: breakpoints on the system prompt and the last user-role message, 5m TTL",
            _system_and_last_user,
        ),
        ClientProfile("none", "no cache_control at all (nothing is cached on Anthropic)", _none),
    )
}

AGENT_PROFILES = {"pi": "pi"}


def profile_for(agent: str, override: str | None = None) -> ClientProfile:
    from replay._errors import ReplayError

    name = override or AGENT_PROFILES.get(agent, "default")
    if name not in PROFILES:
        raise ReplayError(f"unknown client profile {name!r}; known: {', '.join(PROFILES)}")
    return PROFILES[name]
