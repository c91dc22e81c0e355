"""`cline-dedup-file-reads`: Cline's duplicate-file-read removal, tried before truncating.

Rule: at Cline's truncation threshold (see `cline-truncate-keep-first-pair-half`), every file
read more than once in the live history keeps only its latest read; older reads become Cline's
"[[NOTE] This file read has been removed …]" notice, for good. If that saved at least
`saving` of the characters, nothing else happens; otherwise the history is also truncated as
`cline-truncate` does. This is Cline's context management as shipped (≤ 2025): the two passes in
the order ContextManager.ts runs them.

Defaults: saving = 0.3. Cache class: freeze-once.

Source: cline/cline src/core/context/context-management/ContextManager.ts.
"""

from __future__ import annotations

from replay.strategies._base import FRACTION, StrategySpec, register
from replay.strategies.cline_truncate import ClineContext


def cline_dedup(saving: float = 0.3) -> object:
    return ClineContext(dedup=True, dedup_saving=saving)


register(
    StrategySpec(
        family="cline-dedup",
        pattern=r"cline-dedup-file-reads",
        build=cline_dedup,
        cache_class="freeze-once",
        rule="Cline as shipped: at the truncation threshold, older duplicate file reads → notice; "
        "truncate (as cline-truncate) only if that saved < 30 % of the characters",
        defaults={"saving": 0.3},
        bounds={"saving": FRACTION},
        canonical=("cline-dedup-file-reads",),
        source="cline/cline ContextManager.ts",
    )
)
