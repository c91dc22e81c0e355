"""`cline-truncate-keep-first-pair-half`: Cline's context-window truncation.

Rule: when the previous request's tokens (input + output + cache reads + cache writes) reach
`maxAllowed` — window − 27k for 64k windows, − 30k for 128k, − 40k for 200k, else
max(window − 40k, 80 % of the window) — the first user/assistant message pair is kept and a
range of the following API messages is deleted: half of what remains after the previous
deletion (a quarter is kept instead when even half would not fit), ending on an assistant
message. The deleted range only grows; on the first truncation the first assistant message's
first text becomes Cline's truncation notice. Tool results whose call was deleted go too.

This is the truncation alone. Cline as shipped first replaces older duplicate file reads and
truncates only when that saved less than 30 % of the characters: that is
`cline-dedup-file-reads`. This one shows what the truncation costs by itself (on a session that
re-reads files, it deletes messages where Cline would have stubbed the reads).

Defaults: none (thresholds by window size). Cache class: freeze-once.

Source: cline/cline src/core/context/context-management/ContextManager.ts,
context-window-utils.ts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from replay.strategies._base import Bounds, StrategyContext, StrategySpec, register
from replay.strategies._common import (
    MessageGroups,
    PairedView,
    ResultPositions,
    path_of,
    replace_blocks,
    reported_tokens,
    result_kind,
)
from replay.strategies._prompts import LITERAL_CLINE_DUP_READ, LITERAL_CLINE_NOTICE
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    RewriteEvent,
    ToolResultItem,
    View,
    item_chars,
    replace_output,
)


def max_allowed(window: int) -> int:
    fixed = {64000: 27000, 128000: 30000, 200000: 40000}
    if window in fixed:
        return window - fixed[window]
    return max(window - 40000, int(window * 0.8))


class ClineContext:
    """Cline's ContextManager: a growing deleted range and, with `dedup`, file-read notices."""

    def __init__(self, dedup: bool = False, dedup_saving: float = 0.3) -> None:
        self.dedup = dedup
        self.dedup_saving = dedup_saving
        self.deleted: tuple[int, int] | None = None  # API-message range, inclusive
        self.duplicates: set[int] = set()  # event indexes of superseded file reads
        self.notice = False
        self._groups = MessageGroups()
        self._view = PairedView(self._kept)  # the live view, kept as the history grows
        self._results = ResultPositions()

    def _kept(self, n: int, item: Item) -> Item | None:
        g = self._groups.group_of[n]
        if self.deleted and self.deleted[0] <= g <= self.deleted[1]:
            return None
        if isinstance(item, ToolResultItem) and item.event_index in self.duplicates:
            item = replace_output(item, LITERAL_CLINE_DUP_READ)
        if self.notice and g == 1 and isinstance(item, AssistantItem):
            item = with_notice(item)
        return item

    def live(self, history: Sequence[Item], changed: Iterable[int] = ()) -> list[Item]:
        """The kept API messages (with read notices and the truncation notice), pairs repaired;
        `changed`: the history positions whose item the deleted range, the duplicates or the
        notice changed since the last call (only those are mapped again)."""
        self._groups.sync(history)
        self._view.update(history, changed)
        return self._view.items()

    def __call__(self, history: Sequence[Item], ctx: StrategyContext) -> View:
        view = self.live(history)
        limit = max_allowed(ctx.context_window)
        # The previous request's usage alone: Cline adds no estimate of what came since.
        total = reported_tokens(ctx, view)
        if total < limit:
            return View(items=view)
        events = []
        if self.dedup:
            before = sum(item_chars(i) for i in view)
            new = self.mark_duplicates(view)
            if new:
                self._results.sync(history)
                after = self.live(history, self._results.of(new))
                saved = before - sum(item_chars(i) for i in after)
                events.append(RewriteEvent("prune", "older duplicate file reads replaced"))
                if before and saved / before >= self.dedup_saving:
                    return View(items=after, events=events)
        groups = self._groups.sync(history)
        start = self.deleted[1] + 1 if self.deleted else 2
        quarter = total / 2 > limit
        remaining = len(groups) - start
        n = (3 * remaining // 8) * 2 if quarter else (remaining // 4) * 2
        end = start + n - 1
        if (
            end < len(groups)
            and end >= start
            and not isinstance(history[groups[end][0]], AssistantItem)
        ):
            end -= 1
        changed: list[int] = []
        if end >= start and end < len(groups) - 1:
            # The range only grows (from `start`), and the notice goes into group 1 once.
            changed = [pos for g in range(start, end + 1) for pos in groups[g]]
            if not self.notice:
                changed.extend(groups[1])
            self.deleted = (2, end)
            self.notice = True
            events.append(RewriteEvent("drop", f"deleted API messages 2..{end}"))
        if events:
            return View(items=self.live(history, changed), events=events)
        return View(items=view)

    def mark_duplicates(self, view: Sequence[Item]) -> set[int]:
        """Mark every read of a path that a later read in the view repeats; returns the
        event indexes newly marked."""
        reads: dict[str, list[ToolResultItem]] = {}
        for item in view:
            if isinstance(item, ToolResultItem) and result_kind(item) == "read":
                path = path_of(item.arguments)
                if path and item.event_index not in self.duplicates:
                    reads.setdefault(path, []).append(item)
        new = {i.event_index for items in reads.values() for i in items[:-1]}
        self.duplicates |= new
        return new


def with_notice(item: AssistantItem) -> AssistantItem:
    blocks = list(item.blocks)
    first_text = next((n for n, b in enumerate(blocks) if b.type == "text"), None)
    if first_text is None:
        blocks.insert(0, Block("text", text=LITERAL_CLINE_NOTICE))
    else:
        blocks[first_text] = Block("text", text=LITERAL_CLINE_NOTICE)
    return replace_blocks(item, tuple(blocks))


def cline_truncate(keep: str = "half") -> object:
    return ClineContext(dedup=False)


register(
    StrategySpec(
        family="cline-truncate",
        pattern=r"cline-truncate-keep-first-pair-(?P<keep>half)",
        build=cline_truncate,
        cache_class="freeze-once",
        rule="previous request >= maxAllowed (window - 27k/30k/40k) → keep the first pair, delete "
        "half (or 3/4) of the later messages; notice in the first assistant message (the "
        "truncation alone, without the duplicate-read pass Cline runs first: see "
        "cline-dedup-file-reads)",
        defaults={"keep": "half"},
        bounds={"keep": Bounds(words=("half",))},
        canonical=("cline-truncate-keep-first-pair-half",),
        source="cline/cline ContextManager.ts, context-window-utils.ts",
    )
)
