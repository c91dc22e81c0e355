"""Token counts per model family, memoized per distinct piece of text.

Every size `replay` reports is a token count from tiktoken. Each distinct text is tokenized once
(keyed by its content digest); prompts are never re-tokenized as a whole. For providers whose
tokenizer is private (Claude, Gemini) the tiktoken count is scaled by a documented calibration
factor from `pricing/tokenizers.json`, or from the user's own calibration (`use_tokenizers`, or
the `REPLAY_TOKENIZERS` environment variable naming a file of the same schema: its rows replace
the built-in rows of the same family).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path

import numpy as np

from replay._data import load_json
from replay._errors import ReplayError
from replay._model_ids import normalize_model
from replay.tokens._encodings import get_encoding


@dataclass(frozen=True)
class TokenizerFamily:
    """How one family of models is counted."""

    family: str
    encoding: str
    factor: float
    message_overhead: int
    tool_call_overhead: int
    estimated: bool
    source: str


TOKENIZERS_ENV = "REPLAY_TOKENIZERS"
"""Environment variable naming a tokenizer file (schema of `pricing/tokenizers.json`) whose rows
replace the built-in rows of the same family: how a user applies their own `replay calibrate`
result to every command."""

ROW_KEYS = ("family", "pattern", "encoding", "factor", "message_overhead", "tool_call_overhead")
"""Fields every row of a tokenizer file must have."""

_USER_FILE: list[str | None] = [None]
"""The file `use_tokenizers` set (None: the environment variable decides)."""


FACTOR_RANGE = (0.1, 10.0)
"""Factors a tokenizer file may give: a private tokenizer within 10x of tiktoken's count either
way (the measured ones are 1.0 to 1.8); outside it a count is meaningless, or overflows."""
OVERHEAD_RANGE = (0, 1000)
"""Framing tokens per message or tool call a tokenizer file may give (documented: 3 to 12)."""


def _user_rows(path: str) -> list[dict]:
    """The rows of a user's tokenizer file, checked, labelled as the user's."""
    rows = checked_tokenizer_rows(path)
    return [{"estimated": True, "source": f"user file {path}", **row} for row in rows]


class NotATokenizerFile(ReplayError):
    """The file cannot be read, or is no JSON object with a `families` list: not a tokenizer
    file at all (a file that is one, with a row refused, is a plain `ReplayError`)."""


def checked_tokenizer_rows(path: str | os.PathLike) -> list[dict]:
    """The rows of the tokenizer file at `path` as written, each checked (`row_problem`); a
    file that does not load is a `ReplayError` (a user error, not a crash)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as err:  # (UTF-8 and JSON errors: ValueErrors)
        raise NotATokenizerFile(f"{path}: cannot read the tokenizer file ({err})") from None
    rows = data.get("families") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise NotATokenizerFile(f"{path}: a tokenizer file is an object with a `families` list")
    for n, row in enumerate(rows):
        problem = row_problem(row, n)
        if problem:
            raise ReplayError(f"{path}: {problem}")
    return rows


def row_problem(row: object, n: int) -> str | None:
    """Why row `n` of a tokenizer file's `families` would be refused (e.g. `families[0].factor
    must be a number from 0.1 to 10, got 12.0`), None when it loads: the one check for the files
    replay reads and those it writes."""
    missing = [k for k in ROW_KEYS if not isinstance(row, dict) or k not in row]
    if missing:
        return f"families[{n}] lacks {', '.join(missing)}"
    assert isinstance(row, dict)
    for key, value in row.items():
        wrong = _wrong_value(key, value)
        if wrong:
            return f"families[{n}].{key} must be {wrong}, got {_as_json(value)}"
    return None


def _wrong_value(key: str, value: object) -> str | None:
    """What a tokenizer row's `key` must be when `value` is not that, else None."""
    from replay.tokens._encodings import SUPPORTED

    number = _finite(value)
    if key == "factor":
        low, high = FACTOR_RANGE
        ok = number is not None and low <= number <= high
        return None if ok else f"a number from {low:g} to {high:g}"
    if key in ("message_overhead", "tool_call_overhead"):
        low, high = OVERHEAD_RANGE
        ok = number is not None and number.is_integer() and low <= number <= high
        return None if ok else f"a whole number from {low} to {high}"
    if key == "family":
        return None if isinstance(value, str) and value else "a non-empty string"
    if key == "pattern":
        try:
            ok = isinstance(value, str) and re.compile(value) is not None
        except re.error:
            ok = False
        return None if ok else "a regular expression (Python syntax) on the model id"
    if key == "encoding":
        return None if value in SUPPORTED else f"one of {', '.join(SUPPORTED)}"
    if key == "estimated":
        return None if isinstance(value, bool) else "true or false"
    return None


def _as_json(value: object, limit: int = 60) -> str:
    """A value as the file spells it (`true`, `null`, `"x"`), cut to `limit` characters."""
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _finite(value: object) -> float | None:
    """A JSON number as a float (None for anything else, booleans, NaN and infinities)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        return None
    return number if math.isfinite(number) else None


@cache
def _rows_for(path: str | None) -> tuple[dict, ...]:
    builtin = load_json("tokenizers.json")["families"]
    if not path:
        return tuple(builtin)
    user = {row["family"]: row for row in _user_rows(path)}
    # A user row takes the place of the built-in row of its family, so the table's order (more
    # specific patterns first) still holds; rows of families the table lacks are tried first.
    merged = [user.pop(row["family"], row) for row in builtin]
    return (*user.values(), *merged)


def tokenizer_file_in_force() -> str | None:
    """The user's tokenizer file in force (`use_tokenizers`, else `REPLAY_TOKENIZERS`), or None
    for the built-in table."""
    return _USER_FILE[0] or os.environ.get(TOKENIZERS_ENV) or None


def tokenizer_rows() -> tuple[dict, ...]:
    """The tokenizer table in force: the built-in rows, each replaced by the user's row of the
    same family when a tokenizer file is in use, after the user's rows of new families."""
    return _rows_for(tokenizer_file_in_force())


def use_tokenizers(path: str | os.PathLike | None) -> None:
    """Count with the rows of the tokenizer file `path` in place of the built-in rows of the same
    families (None: back to the environment variable, else the built-in table). Resets the
    shared counters and the family lookups."""
    if path is not None:
        _user_rows(str(path))  # fail now, not at the first count
    _USER_FILE[0] = str(path) if path is not None else None
    family_for.cache_clear()
    _COUNTERS.clear()


def _family(row: dict) -> TokenizerFamily:
    return TokenizerFamily(
        family=row["family"],
        encoding=row["encoding"],
        factor=float(row["factor"]),
        message_overhead=int(row["message_overhead"]),
        tool_call_overhead=int(row["tool_call_overhead"]),
        estimated=bool(row.get("estimated", True)),
        source=str(row.get("source", "")),
    )


@cache
def family_for(model: str) -> TokenizerFamily:
    """The tokenizer family of a model id: the first row of the table in force whose pattern
    matches the id as given or its normal form (`us.anthropic.claude-opus-4-8-v1:0` and
    `anthropic/claude-sonnet-4.5`, Bedrock's and OpenRouter's ids, are Claude's)."""
    normal = normalize_model(model)
    for row in tokenizer_rows():
        if re.search(row["pattern"], model) or re.search(row["pattern"], normal):
            return _family(row)
    raise ReplayError(f"no tokenizer family matches the model {model!r}")


def family_named(name: str) -> TokenizerFamily:
    """A tokenizer family by its name (the first row of that name in the table in force)."""
    for row in tokenizer_rows():
        if row["family"] == name:
            return _family(row)
    raise ReplayError(f"no tokenizer family is called {name!r}")


UTF8_PART_CHARS = 1 << 14
"""Characters of a long text encoded to UTF-8 at a time (`utf8_parts`)."""


def utf8_parts(text: str) -> Iterator[bytes]:
    """`text.encode("utf-8", "surrogatepass")` in consecutive parts (one for a short text):
    CPython reserves up to 3 bytes a character for the output of one encode (4 for a text with
    characters beyond the BMP), so a summarizer transcript encoded whole for its digest or its
    packing took up to ~2 MB more for a moment. Each code point is encoded on its own (a lone
    surrogate as well, with `surrogatepass`), so the parts join into the whole encoding."""
    if len(text) <= UTF8_PART_CHARS:
        yield text.encode("utf-8", "surrogatepass")
        return
    for start in range(0, len(text), UTF8_PART_CHARS):
        yield text[start : start + UTF8_PART_CHARS].encode("utf-8", "surrogatepass")


def text_digest(text: str, prefix: bytes = b"") -> bytes:
    """16-byte BLAKE2b of `prefix` then `text` in UTF-8 (`utf8_parts`: no whole copy of a long
    text): the key of a text no longer held (`DigestCounts`) and of a block (`BlockTable`)."""
    hasher = hashlib.blake2b(prefix, digest_size=16)
    if len(text) <= UTF8_PART_CHARS:  # (most texts: `utf8_parts`' one part, without its generator)
        hasher.update(text.encode("utf-8", "surrogatepass"))
    else:
        for part in utf8_parts(text):
            hasher.update(part)
    return hasher.digest()


class DigestCounts:
    """Token counts by text digest (`text_digest`), for texts no longer held.

    New counts wait in a small dict; `compact` moves them into two sorted columns of the digest's
    halves and one of counts (numpy: a few blocks of memory, whatever the number of entries). A
    dict of its own would keep one `bytes` digest and often one `int` per entry, ~10,000 small
    objects by the end of `--strategies all`, many allocated in the middle of a strategy (the
    summaries a summarizer call releases): each such survivor kept its allocator pool, and so a
    whole arena of that strategy's memory, resident for the rest of the replay."""

    def __init__(self) -> None:
        self._pending: dict[bytes, int] = {}
        # Arrays of machine ints rather than numpy's: a lookup bisects them and reads Python
        # ints from them (numpy's `searchsorted` with a scalar and its element reads cost a few
        # µs of conversions per lookup, most of it); `compact` sorts them with numpy.
        self._high = array("Q")
        """First 8 bytes of each digest (big-endian), sorted with `_low` as tie-breaker."""
        self._low = array("Q")
        self._counts = array("q")

    def __len__(self) -> int:
        return len(self._pending) + len(self._counts)

    def __setitem__(self, digest: bytes, count: int) -> None:
        self._pending[digest] = count

    def get(self, digest: bytes) -> int | None:
        hit = self._pending.get(digest)
        if hit is not None or not len(self._counts):
            return hit
        highs = self._high
        high = int.from_bytes(digest[:8], "big")
        i = bisect_left(highs, high)
        if i < len(highs) and highs[i] == high:
            low = int.from_bytes(digest[8:], "big")
            while i < len(highs) and highs[i] == high:
                if self._low[i] == low:
                    return self._counts[i]
                i += 1
        return None

    def compact(self) -> None:
        """Move the pending counts into the sorted columns (between strategies)."""
        if not self._pending:
            return
        digests = b"".join(self._pending)
        fresh = np.frombuffer(digests, dtype=">u8").astype(np.uint64).reshape(-1, 2)
        high = np.concatenate([np.frombuffer(self._high, dtype=np.uint64), fresh[:, 0]])
        low = np.concatenate([np.frombuffer(self._low, dtype=np.uint64), fresh[:, 1]])
        counts = np.concatenate([
            np.frombuffer(self._counts, dtype=np.int64),
            np.fromiter(self._pending.values(), np.int64, len(self._pending)),
        ])
        self._pending = {}
        order = np.lexsort((low, high))
        high, low, counts = high[order], low[order], counts[order]
        # A text forgotten again (seen anew by a later strategy) has the same count: once.
        keep = np.ones(len(high), dtype=bool)
        keep[1:] = (high[1:] != high[:-1]) | (low[1:] != low[:-1])
        self._high = array("Q", high[keep].tobytes())
        self._low = array("Q", low[keep].tobytes())
        self._counts = array("q", counts[keep].tobytes())


TOKEN_CACHE_IDS = 1 << 16
"""Token ids kept for prefix diffs during one strategy (int32: 256 kB), whatever the log's size.
Each strategy fills it anew (`forget`); 1 MB (2**18 ids) saved ~5% of the encodings of
`--strategies all` at 1,000 requests, no measurable time, and cost ~0.3× the log's size in peak
memory."""


LARGE_TEXT_CHARS = 1 << 16
"""A text this long is mostly a summarizer call's transcript, counted once and dropped right
after (`TokenCounter._encode`): it is encoded as it is (its UTF-8 form dies with it; a copy, 2-4
bytes a character, raised `aider-summarize-auto`'s call peak by 1.1 MB over 3.4 MB at 1,000
synthetic requests), and its ids stay a view of tiktoken's buffer (a copy of them would be
another 4 bytes a token at that peak). Shorter non-ASCII texts are encoded through a copy."""


ENCODE_PIECE_CHARS = 1 << 14
"""A large text is encoded this many characters at a time (about), cut where the encodings'
pre-tokenizer always cuts (`_pieces`): tiktoken's own buffers, and the UTF-8 form CPython keeps
with a non-ASCII text it was asked for, are then those of a piece, not of the whole text."""

_PIECE_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789[#")


def _pieces(text: str, size: int = ENCODE_PIECE_CHARS) -> list[str]:
    """`text` cut into consecutive pieces of about `size` characters, each cut right after a
    newline followed by an ASCII letter, a digit, `[` or `#`. Both supported encodings
    (`o200k_base`, `cl100k_base`) split there: in their patterns a newline only ever ends a
    pre-token (whitespace runs; punctuation followed by newlines, or by `/` in o200k), and
    none of those characters continues one that holds a newline; a run of whitespace that ends
    a piece is cut as it is in the whole text (up to its last newline). So the ids of the
    pieces, one after the other, are the ids of the text (tests check it)."""
    out: list[str] = []
    start, n = 0, len(text)
    while n - start > size:
        cut = text.rfind("\n", start, start + size)
        while cut >= start and text[cut + 1] not in _PIECE_START:
            cut = text.rfind("\n", start, cut)
        if cut < start:  # none in the window: the first one after it
            cut = start + size
            while True:
                cut = text.find("\n", cut)
                if cut < 0 or cut + 1 >= n or text[cut + 1] in _PIECE_START:
                    break
                cut += 1
            if cut < 0 or cut + 1 >= n:
                break
        out.append(text[start : cut + 1])
        start = cut + 1
    out.append(text[start:] if start else text)
    return out


def _first_mismatch(a: np.ndarray, b: np.ndarray) -> int:
    """Index of the first differing id of two id arrays (the shorter's length if none)."""
    n = min(len(a), len(b))
    diff = np.flatnonzero(a[:n] != b[:n])
    return int(diff[0]) if len(diff) else n


_COMPARE_CHARS = 1 << 12


def _common_chars(a: str, b: str) -> int:
    """Length of the longest common prefix of two strings (compared a slice at a time)."""
    n = min(len(a), len(b))
    low = 0
    while low < n and a[low : low + _COMPARE_CHARS] == b[low : low + _COMPARE_CHARS]:
        low += _COMPARE_CHARS
    high = min(low + _COMPARE_CHARS, n)
    if low >= n or a[low:high] == b[low:high]:  # (the slices differed in length only)
        return high
    while high - low > 1:  # a[:low] == b[:low]; a[low:high] != b[low:high]
        mid = (low + high) // 2
        if a[low:mid] == b[low:mid]:
            low = mid
        else:
            high = mid
    return low


def _cut_before(text: str, parted: int) -> int:
    """The last cut of `_pieces` before character `parted` (a position p < parted, after a
    newline, whose character can start a piece; 0 if none): the text before it encodes on its
    own, and `parted` > p makes the character at p one both texts have."""
    newline = text.rfind("\n", 0, max(0, parted - 1))
    while newline >= 0:
        if text[newline + 1] in _PIECE_START:
            return newline + 1
        newline = text.rfind("\n", 0, newline)
    return 0


def _cut_after(text: str, parted: int) -> int:
    """The first cut of `_pieces` after character `parted` (len(text) if none)."""
    newline = text.find("\n", parted)
    while 0 <= newline < len(text) - 1:
        if text[newline + 1] in _PIECE_START:
            return newline + 1
        newline = text.find("\n", newline + 1)
    return len(text)


class TokenCounter:
    """Counts tokens for one model family; each distinct text is encoded at most once."""

    def __init__(
        self, model: str, *, factor: float | None = None, token_cache: int = TOKEN_CACHE_IDS
    ):
        self.family = family_for(model)
        self.factor = self.family.factor if factor is None else factor
        # The factor as its file writes it (1.1, not the float just above it): its products are
        # exact, so a count of 100 tokens at 1.1 is 110, not ceil(110.00000000000001) = 111.
        ratio = Fraction(repr(float(self.factor)))
        self._num, self._den = ratio.numerator, ratio.denominator
        self._encoding = get_encoding(self.family.encoding)
        self._counts: dict[str, int] = {}
        self._forgotten = DigestCounts()
        """Counts of texts no longer held (`forget`, `release`), by digest."""
        self._tokens: OrderedDict[str | bytes, np.ndarray] = OrderedDict()
        """Token ids by text, or by digest once the text is forgotten (`forget`)."""
        self._token_cache = token_cache
        self._cached_ids = 0
        self.encode_calls = 0

    def raw_tokens(self, text: str) -> np.ndarray:
        """tiktoken ids of `text`. Only prefix diffs need ids (of the two blocks where prompts
        part), so they stay in an LRU bounded by token count; counts are kept for good."""
        key: str | bytes = text
        hit = self._tokens.get(key)
        if hit is None and self._forgotten:
            key = text_digest(text)
            hit = self._tokens.get(key)
        if hit is not None:
            self._tokens.move_to_end(key)
            return hit
        self.encode_calls += 1
        ids = self._encode(text)
        self._tokens[text] = ids
        self._cached_ids += len(ids)
        while self._cached_ids > self._token_cache and len(self._tokens) > 1:
            _, old = self._tokens.popitem(last=False)
            self._cached_ids -= len(old)
        return ids

    def _encode(self, text: str) -> np.ndarray:
        """`encode_ordinary(text)` as int32, straight from tiktoken's buffer: a list of Python
        ints first would cost ~10× the array (36 bytes a token), every one of them a small
        object scattered over the interpreter's arenas."""
        large = len(text) >= LARGE_TEXT_CHARS
        if not large and not text.isascii():
            # tiktoken reads a str through its UTF-8 form, which CPython then keeps attached to
            # that str for as long as it lives (up to as large as the text again: summaries
            # with an ellipsis, non-ASCII tool outputs): encode a copy, freed right after.
            text = "".join((text, ""))
        if large:
            parts = [self._encode_piece(piece).view(np.int32) for piece in _pieces(text)]
            return parts[0] if len(parts) == 1 else np.concatenate(parts)
        # ids < 2**31: the same values, in an array of its own (not a view of tiktoken's buffer,
        # which takes three more objects per memo entry)
        return self._encode_piece(text).astype(np.int32)

    def _encode_piece(self, text: str) -> np.ndarray:
        try:
            return self._encoding.encode_to_numpy(text, disallowed_special=())
        except UnicodeEncodeError:  # lone surrogates: what `encode_ordinary` does with them
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return self._encoding.encode_to_numpy(text, disallowed_special=())

    def shared_tokens(self, a: str, b: str) -> int:
        """How many leading tiktoken ids the encodings of `a` and `b` share.

        Only the texts up to a little past the first character where they part are encoded
        (both ids are used as they are when the ids cache holds them): before it, from the
        last cut (`_pieces`) the encodings split at, the ids are the same; after it, each
        text is encoded up to its next such cut, and the ids part within those windows. A
        prompt rewritten by a strategy differs from the cached one inside a block that starts
        the same: a tool output cut to its first lines, a summary rewritten near its end."""
        ids_a, ids_b = self._tokens.get(a), self._tokens.get(b)
        if ids_a is not None and ids_b is not None:
            return _first_mismatch(ids_a, ids_b)
        parted = _common_chars(a, b)
        if parted == 0 and (not a or not b or a[0].isascii() or b[0].isascii()):
            return 0  # their first bytes differ, and so do their first tokens
        start = _cut_before(a, parted)
        end_a, end_b = _cut_after(a, parted), _cut_after(b, parted)
        window_a, window_b = self._encode(a[start:end_a]), self._encode(b[start:end_b])
        self.encode_calls += 2
        first = _first_mismatch(window_a, window_b)
        if first == min(len(window_a), len(window_b)):
            # The shorter window must end its text (each window reaches past `parted`, where
            # the texts differ): then the shorter text's ids are a prefix of the other's.
            shorter_ends = end_a == len(a) if len(window_a) <= len(window_b) else end_b == len(b)
            if not shorter_ends:
                return _first_mismatch(self.raw_tokens(a), self.raw_tokens(b))
        before = 0
        if start:
            before = len(self._encode(a[:start]))
            self.encode_calls += 1
        return before + first

    def count(self, text: str) -> int:
        """Provider-scale token count of `text` (tiktoken count × calibration factor)."""
        hit = self._counts.get(text)
        if hit is None:
            hit = self._forgotten.get(text_digest(text)) if self._forgotten else None
            if hit is None:
                hit = self.scale(len(self.raw_tokens(text)))
            self._counts[text] = hit
        return hit

    def release(self, text: str) -> None:
        """`forget` for one text, now (a summarizer transcript once its call is simulated)."""
        n = self._counts.pop(text, None)
        if n is None:
            return
        digest = text_digest(text)
        self._forgotten[digest] = n
        ids = self._tokens.pop(text, None)
        if ids is not None:
            self._tokens[digest] = ids

    def forget(self, keep: Callable[[str], bool]) -> None:
        """Stop holding the texts `keep` rejects (what one strategy derived: summaries,
        shortened outputs), keeping their counts by digest: memory stays O(log), and a text
        seen again is still not tokenized again. Drops every token id: called between
        strategies, when the ids are a few blocks' worth of re-encoding for the next one."""
        kept: dict[str, int] = {}
        for text, n in self._counts.items():
            if keep(text):
                kept[text] = n
            else:
                self._forgotten[text_digest(text)] = n
        self._counts = kept
        # The ids LRU was filled during the strategy that just ended: kept, its arrays and
        # entries would keep that strategy's heap pages and allocator arenas resident (peak of
        # `--strategies all` ~0.3x the log higher, 1,000 requests), for ~10% more encodings
        # of diverging blocks over the strategies.
        self._tokens = OrderedDict()
        self._cached_ids = 0
        # After the strategy's memory is freed (`forget_counts` runs then), like the digests.
        self._forgotten.compact()

    def scale(self, raw: int) -> int:
        """A count on the provider's scale: `raw` × the factor, rounded up."""
        return raw if self.factor == 1.0 else -(-raw * self._num // self._den)

    def scale_position(self, raw: int) -> int:
        """A token offset inside a text, on the provider's scale."""
        return raw if self.factor == 1.0 else raw * self._num // self._den


_COUNTERS: dict[str, TokenCounter] = {}


def counter_for(model: str) -> TokenCounter:
    """One shared counter per model family, so the memo is shared across strategies."""
    family = family_for(model).family
    if family not in _COUNTERS:
        _COUNTERS[family] = TokenCounter(model)
    return _COUNTERS[family]


def forget_counts(keep: Callable[[str], bool]) -> None:
    """`TokenCounter.forget` on every shared counter."""
    for counter in _COUNTERS.values():
        counter.forget(keep)
