"""Text from a log or a file name made safe to show: on a terminal, an escape sequence in a file
name could retitle or clear it, and in a page's title a control character is a parse error."""

from __future__ import annotations

import re

_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"  # controls but tab and newline (a carriage return rewrites)
    "\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks: they reorder what follows
    "\ud800-\udfff]"  # lone surrogates: a file name's bytes that are no UTF-8
)


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # Python's `surrogateescape` of the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """`text` with its control characters, bidirectional marks and lone surrogates written as
    `\\xNN` / `\\uNNNN`; everything else, tabs and newlines included, as it is."""
    return _UNSAFE.sub(_escaped, text)


def printable_json(text: str) -> str:
    """JSON text (rows printed to be pasted) with what `printable` escapes written as JSON
    escapes, `\\uNNNN`: shown, it cannot reorder or clear the terminal; read back, it is the
    same text."""
    return _UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)
