"""Evidence loss: actions of the recorded agent that relied on text a strategy hid."""

from replay.evidence._blind import (
    BlindAction,
    EvidenceChecker,
    forget_shared_answers,
    share_answers_for,
)

__all__ = ["BlindAction", "EvidenceChecker", "forget_shared_answers", "share_answers_for"]
