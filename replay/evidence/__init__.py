"""Evidence loss: actions of the recorded agent that relied on text a strategy hid."""

from replay.evidence._blind import (
    HIDDEN_MENTION,
    STUBBED_READ,
    BlindAction,
    EvidenceChecker,
    forget_shared_answers,
    share_answers_for,
)
from replay.evidence._known import client_vocabulary

__all__ = [
    "HIDDEN_MENTION",
    "STUBBED_READ",
    "BlindAction",
    "EvidenceChecker",
    "client_vocabulary",
    "forget_shared_answers",
    "share_answers_for",
]
