"""Fidelity: the simulator against what the provider really billed."""

from replay.fidelity._fidelity import (
    Bill,
    FidelityRow,
    bill,
    fidelity_frame,
    fidelity_rows,
    fidelity_summary,
    moved_options,
)

__all__ = ["Bill", "FidelityRow", "bill", "fidelity_frame", "fidelity_rows", "fidelity_summary",
           "moved_options"]
