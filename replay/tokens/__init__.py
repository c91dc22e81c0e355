"""Offline tiktoken counting per model family, and its calibration on recorded usage."""

from replay.tokens._calibrate import (
    CalibrationPair,
    CalibrationPairs,
    Estimate,
    FamilyCalibration,
    FramingFit,
    LogFactor,
    calibrate,
    calibration_dict,
    calibration_pairs,
    fit_family,
    logs_label,
    tokenizer_file,
)
from replay.tokens._counter import (
    TOKENIZERS_ENV,
    TokenCounter,
    TokenizerFamily,
    counter_for,
    family_for,
    family_named,
    tokenizer_file_in_force,
    tokenizer_rows,
    use_tokenizers,
    utf8_parts,
)
from replay.tokens._encodings import get_encoding
from replay.tokens._overrides import FittedCounter, fitted_counter

__all__ = [
    "TOKENIZERS_ENV",
    "CalibrationPair",
    "CalibrationPairs",
    "Estimate",
    "FamilyCalibration",
    "FittedCounter",
    "FramingFit",
    "LogFactor",
    "TokenCounter",
    "TokenizerFamily",
    "calibrate",
    "calibration_dict",
    "calibration_pairs",
    "counter_for",
    "family_for",
    "family_named",
    "fit_family",
    "fitted_counter",
    "get_encoding",
    "logs_label",
    "utf8_parts",
    "tokenizer_file",
    "tokenizer_file_in_force",
    "tokenizer_rows",
    "use_tokenizers",
]
