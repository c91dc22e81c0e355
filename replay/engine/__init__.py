"""The replay engine and its tabular results."""

from replay.engine._replay import ReplayConfig, RequestRecord, replay_session
from replay.engine._results import (
    EVIDENCE_COLUMNS,
    SUMMARY_COLUMNS,
    TURN_COLUMNS,
    summary_frame,
    turns_frame,
)

__all__ = [
    "EVIDENCE_COLUMNS",
    "SUMMARY_COLUMNS",
    "TURN_COLUMNS",
    "ReplayConfig",
    "RequestRecord",
    "replay_session",
    "summary_frame",
    "turns_frame",
]
