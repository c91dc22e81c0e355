"""Fidelity: the simulator against what the provider really billed.

`fidelity(log)` is the verb of `replay fidelity` (a `FidelityResult`: `.frame`, `.summary`,
`.notes`)."""

from typing import Any

from replay.fidelity._fidelity import (
    Bill,
    FidelityRow,
    bill,
    fidelity_frame,
    fidelity_rows,
    fidelity_summary,
    moved_options,
)

__all__ = ["Bill", "FidelityResult", "FidelityRow", "bill", "fidelity", "fidelity_frame",
           "fidelity_rows", "fidelity_summary", "moved_options"]


def __getattr__(name: str) -> Any:
    if name in ("fidelity", "FidelityResult"):  # from the API module, which imports this one
        import replay._api

        return getattr(replay._api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
