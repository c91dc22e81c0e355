"""Fidelity: the simulator against what the provider really billed."""

from replay.fidelity._fidelity import (
    FidelityRow,
    fidelity_frame,
    fidelity_rows,
    fidelity_summary,
)

__all__ = ["FidelityRow", "fidelity_frame", "fidelity_rows", "fidelity_summary"]
