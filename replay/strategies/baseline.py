"""`baseline`: send the whole history every turn (the control; append-only, maximal cache reuse).

Source: the seed study's control strategy; pi's bare `Agent` with no `transformContext`.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay.strategies._base import StrategyContext, StrategySpec, register
from replay.strategies._view import Item


def baseline() -> object:
    def send_everything(history: Sequence[Item], ctx: StrategyContext) -> list[Item]:
        return list(history)

    return send_everything


register(
    StrategySpec(
        family="baseline",
        pattern=r"baseline",
        build=baseline,
        cache_class="append-only",
        rule="send every message and every full tool result on every request",
        canonical=("baseline",),
        source="seed study (pi bare Agent, no transformContext)",
    )
)
