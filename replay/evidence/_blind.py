"""Evidence loss: text the recorded agent went on to use that a strategy's view hid.

Offline replay holds the recorded trajectory fixed, so it cannot know what the model would have
done with less context. What it can check, at each request, is whether the response the agent
actually gave *used* text that the strategy's view did not show in full while the log had it:

- `hidden-edit-target`: a write or edit whose old text (an `old_string` and the like, each edit
  of a MultiEdit, the removed and context lines of an `apply_patch` patch; for a whole-file
  write: the lines around the change, against the file's last known content) was not visible
  in the view;
- `hidden-quote`: a tool call whose arguments quote a path, identifier, error string or quoted
  phrase that appears in the history but not in the view (plain words and flags do not
  count, nor names the agent had from elsewhere: `_known`); a file a patch deletes is quoted
  as `rm` quotes it, where the patch's edits relied on nothing hidden;
- `stubbed-read`: beside a `hidden-edit-target`, the file being changed was shown only as a stub
  or cut-down read, so a real agent would have had to read it again first (a re-read cost the
  replay does not include); a detail of that edit, not an action of its own;
- `hidden-mention`: not an action: the response's own text (its text blocks, not its
  thinking) names something exact (a code, a path, an identifier) that only hidden text
  held — the agent reasoned about what this view hid. Counted apart (`blind_mentions`),
  since an agent often names a thing it then re-reads.

A flag means "the agent acted on something this view hid", not "the run would have failed".
"""

from __future__ import annotations

import difflib
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import compress, islice, repeat
from operator import contains
from typing import NamedTuple

import numpy as np

from replay.evidence._known import general_knowledge
from replay.strategies._common import editor_kind, path_of, reads_part_of_file
from replay.strategies._view import (
    AssistantItem,
    Block,
    Item,
    ToolResultItem,
    shared_prefix,
)

_WRITE_TOOL = re.compile(r"write|edit|patch|replace|create|str_replace", re.IGNORECASE)
_READ_TOOL = re.compile(r"read|view|cat|open", re.IGNORECASE)
_CONTENT_KEYS = ("content", "file_text", "text", "contents")
_OLD_KEYS = ("old_string", "old_str", "oldText", "oldString", "old_text", "search")
_PATCH_KEYS = ("input", "patchText", "patch")
"""Where an `apply_patch` call (Codex, opencode) holds its patch."""
_PATCH_FILE = re.compile(r"^\*\*\* (Update|Delete|Add) File: (.+)$", re.MULTILINE)
# A Claude Code read numbers its lines (`    16→text`): the file's content is without them.
_NUMBERED_LINE = re.compile(r"^ *\d+→", re.MULTILINE)
# An editor tool's `view` numbers them as `cat -n` does (`     16\ttext`).
_TAB_NUMBERED_LINE = re.compile(r"^ *\d+\t", re.MULTILINE)
# Quoted strings of a tool call's arguments, paired left to right (`grep -n 'x' -r "Preview theme"`:
# `'x'` and `"Preview theme"`, never the unquoted text between two of them); a phrase is one whose
# words a space or tab separates (`_SPACED`), quoted as a whole.
_QUOTED = re.compile(r""""([^"\n]*)"|'([^'\n]*)'""")
_SPACED = re.compile(r"\S[ \t]+\S")
# The characters a JSON rendering escapes (as `\"`, `\\`, `\t`…; a newline too, but no line
# holds one): a string argument holding one is not found as it is in its call's rendered text.
_ESCAPED = re.compile(r'["\\\x00-\x09\x0b-\x1f]')
# Quotable pieces of arguments: paths, dotted/snake/camel identifiers, and quoted strings.
_QUOTABLE = re.compile(r"[\w./-]*[A-Za-z_][\w./-]{5,}")
# The characters quotable pieces are made of. A string of only such characters holds no
# whitespace and no other ASCII character, so it is in a text iff it is inside one of the
# text's tokens: the text split at whitespace and at every other ASCII character (`_TOKENS`).
_RUN = re.compile(r"[\w./-]+")
# In the agent's prose only pieces that name something exact count: a word with a digit, an
# underscore, a dot or a slash inside, or a capital after a small letter (`E1234`, `src/api.js`,
# `parseTodoId`, `MAX_RETRIES`); plain words recur in every text.
_DISTINCTIVE = re.compile(r"[0-9_/]|\w\.\w|[a-z][A-Z]")
_TOKENS = str.maketrans({c: " " for c in range(128) if not _RUN.fullmatch(chr(c))})
_MAX_EXCERPT = 300
STUBBED_READ = "stubbed-read"
"""Detail of a `hidden-edit-target`: the read that showed the edited file was a stub. It goes
with the edit it explains, so it is not an action of its own."""
HIDDEN_MENTION = "hidden-mention"


def _matcher(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    """`pattern.search(name) is not None`, memoized: asked of every tool call of every request,
    per strategy, about a handful of tool names."""
    known: dict[str, bool] = {}

    def matches(name: str) -> bool:
        hit = known.get(name)
        if hit is None:
            if len(known) >= 4096:  # bounded whatever names a log uses
                known.clear()
            hit = known[name] = pattern.search(name) is not None
        return hit

    return matches


_is_write = _matcher(_WRITE_TOOL)
_is_read = _matcher(_READ_TOOL)


@dataclass(frozen=True)
class BlindAction:
    """One action of the recorded agent that relied on text the view hid."""

    request_index: int
    """Request whose response took the action."""
    request_id: str
    tool: str
    """Tool called (empty for a `hidden-mention`: the response's text)."""
    kind: str
    """`hidden-edit-target`, `hidden-quote`, `stubbed-read` or `hidden-mention`."""
    path: str | None
    """File concerned, when the call names one."""
    excerpt: str
    """The hidden text the action relied on (shortened)."""


def _first(arguments: object, keys: Sequence[str]) -> str | None:
    if isinstance(arguments, dict):
        for key in keys:
            value = arguments.get(key)
            if isinstance(value, str):
                return value
    return None


def _patch_of(arguments: object) -> str | None:
    """The patch of an `apply_patch` call (`*** Begin Patch` … `*** Update File: …`), if any."""
    patch = _first(arguments, _PATCH_KEYS)
    return patch if patch is not None and _PATCH_FILE.search(patch) is not None else None


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def _old_lines(arguments: object) -> tuple[str | None, list[str] | None]:
    """(the file an edit call changes, the lines it needs the file to hold) of an edit that
    names its old text: `old_string` and the like, each of a MultiEdit's `edits`, or the
    removed and context lines of an `apply_patch` patch (its first updated file); (path, None)
    for a call that names none (a whole-file write)."""
    path = path_of(arguments)
    old = _first(arguments, _OLD_KEYS)
    if old is not None:
        return path, _lines(old)
    edits = arguments.get("edits") if isinstance(arguments, dict) else None
    if isinstance(edits, list) and edits:
        olds = [_first(e, _OLD_KEYS) for e in edits]
        return path, [ln for o in olds if o is not None for ln in _lines(o)]
    patch = _patch_of(arguments)
    if patch is None:
        return path, None
    needed: list[str] = []
    updating = False
    for line in patch.splitlines():
        m = _PATCH_FILE.match(line)
        if m is not None:
            updating = m.group(1) == "Update"
            if updating and path is None:
                path = m.group(2).strip()
        elif updating and line[:1] in ("-", " ") and not line.startswith("***"):
            needed.extend(_lines(line[1:]))
    return path, needed


def _deleted_files(arguments: object) -> list[str]:
    """The files an `apply_patch` call deletes (`*** Delete File: …`), in order."""
    patch = _patch_of(arguments)
    if patch is None:
        return []
    return [m.group(2).strip() for m in _PATCH_FILE.finditer(patch) if m.group(1) == "Delete"]


def _edits_a_file(arguments: object) -> bool:
    """A write tool's call that changes a file (its old text, a list of edits, a patch, or a
    whole content); not `TodoWrite` or `write_stdin`, whose names only look like a write's,
    nor an empty list of edits, which changes nothing."""
    if not isinstance(arguments, dict):
        return False
    edits = arguments.get("edits")
    if _first(arguments, _OLD_KEYS) is not None or (isinstance(edits, list) and edits):
        return True
    return _patch_of(arguments) is not None or (
        path_of(arguments) is not None and _first(arguments, _CONTENT_KEYS) is not None
    )


def _file_text(output: str) -> str | None:
    """A read's output as the file's content: a Claude Code read's line numbers (`    16→`, or
    `16<tab>` since Claude Code 2.1) and the reminder it appends left out (a whole-file write
    diffed against them changed every line, and "the lines around the change" became the
    whole file). None for a read of part of the file, numbered with arrows from another line
    than 1: not the file's content, whatever its call's arguments said."""
    if "→" in output:
        pattern, arrows = _NUMBERED_LINE, True
    elif "\t" in output:
        pattern, arrows = _TAB_NUMBERED_LINE, False
    else:  # no numbered line: found at C speed (most reads of most logs)
        return output
    numbered = pattern.findall(output)
    # Only a read of the whole file is taken for its content (`_History`): its numbers count
    # lines from the first. A tab after a number also starts a line of a table: counting
    # otherwise, it is the file's own text; an arrow numbers a read's lines only: counting
    # otherwise, it read a range.
    counted = all(int(n.strip("\t →")) == k for k, n in enumerate(numbered, 1))
    if not counted and not arrows:
        return output
    lines = output.count("\n") + (not output.endswith("\n"))  # a final newline ends a line
    if not numbered or 2 * len(numbered) < lines:
        return output
    if not counted:
        return None
    text = output.split("<system-reminder>", 1)[0]
    return pattern.sub("", text).rstrip("\n") + "\n"


def _viewed_text(output: str) -> str:
    """An editor `view`'s output as the file's content: its numbered lines without their
    numbers (the header it writes above them, "Here's the result of running `cat -n` on …",
    is no line of the file)."""
    if "\t" not in output:  # no numbered line
        return output
    lines = output.splitlines()
    numbered = [m for line in lines if (m := _TAB_NUMBERED_LINE.match(line))]
    if not numbered or 2 * len(numbered) < len(lines):
        return output
    return "".join(m.string[m.end():] + "\n" for m in numbered)


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_EXCERPT else text[: _MAX_EXCERPT - 1] + "…"


def _last_containing(
    texts: list[str], text: str, stop: int = 0, end: int | None = None
) -> int | None:
    """Index of the last of `texts[stop:end]` that contains `text`, or None. Searches from the
    end (what an action quotes is most often recent), in C (`map`/`compress`), up to the first
    hit, without copying the texts before it."""
    if end is None:
        n = len(texts)
        flags = map(contains, islice(reversed(texts), n - stop), repeat(text))
    else:
        n = end
        flags = map(contains, map(texts.__getitem__, range(n - 1, stop - 1, -1)), repeat(text))
    return next(compress(range(n - 1, stop - 1, -1), flags), None)


def _quotables(text: str) -> Iterator[str]:
    """The quotable pieces of `text`, without the full stop that ends a sentence after a name
    (`… in src/api.js.`): the name is what another text holds. A path's `..` stays."""
    for piece in _QUOTABLE.findall(text):
        if piece.endswith(".") and not piece.endswith(".."):
            piece = piece[:-1]
            if not _QUOTABLE.fullmatch(piece):
                continue
        yield piece


def _names_something(piece: str) -> bool:
    """A piece that names something exact (`_DISTINCTIVE`), not a command's flag or an
    operating system's device: `--noEmit` has a capital after a small letter and `/dev/null`
    a slash, and they recur in any text all the same (`2>/dev/null` was the commonest hidden
    quote on the samples: no log has to tell an agent that name), nor a name a model has in any
    project (`general_knowledge`: `GitHub`, `console.log`, a bare `README.md`)."""
    return (
        not piece.startswith(("-", "/dev/"))
        and _DISTINCTIVE.search(piece) is not None
        and not general_knowledge(piece)
    )


def _hidden_pieces(texts: Iterable[str], request: _Request, distinctive: bool = False) -> list[str]:
    """The quotable pieces of `texts` that only hidden text holds, each once, in order
    (`distinctive`: only those that name something exact, for the agent's prose)."""
    hidden: list[str] = []
    for text in texts:
        for piece in dict.fromkeys(_quotables(text)):
            if (not distinctive or _names_something(piece)) and request.hidden(piece) and (
                piece not in hidden
            ):
                hidden.append(piece)
    return hidden


def _phrases(strings: Iterable[str]) -> list[str]:
    """Phrases quoted in `strings` (`grep -n "Preview theme" …`), each once: as a whole, they
    name something exact even when their words do not."""
    found: dict[str, None] = {}
    for text in strings:
        for double, single in _QUOTED.findall(text):
            phrase = (double or single).strip()
            if len(phrase) >= 10 and _SPACED.search(phrase):
                found.setdefault(phrase, None)
    return list(found)


def _strings(value: object, found: list[str]) -> list[str]:
    """`found` extended with every string inside `value` (JSON arguments), depth first. A plain
    function, not a closure calling itself: such a closure is a reference cycle, left for the
    cyclic collector at every tool call."""
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for v in value.values():
            _strings(v, found)
    elif isinstance(value, list):
        for v in value:
            _strings(v, found)
    return found


def _as_list(items: Sequence[Item]) -> list[Item]:
    return items if isinstance(items, list) else list(items)


def _add_parts(texts: list[str], item: Item) -> None:
    """Append the parts of `item`'s text (`item_text`) to `texts`: an assistant item's blocks
    one by one (`Block.rendered`), then the string arguments its JSON escapes, as they are;
    any other item's one text.

    Every string the checker asks about holds no newline, and an assistant item's text is its
    blocks' texts joined by newlines, so the item holds it iff one of its blocks does: the
    blocks answer as the joined text would, without a joined copy of every assistant message
    (`AssistantItem.shown_text`, ~0.15x the log's size, built again by each strategy's run)."""
    if isinstance(item, AssistantItem):
        texts.extend(map(Block.rendered, item.blocks))
        for b in item.blocks:
            # A string argument the JSON escapes (a line with a quote, a backslash or a tab)
            # is shown all the same: its own text is a part too (the call's rendered text
            # alone missed it, and an edit of a line the agent had just written counted).
            if b.type == "tool_call" and b.arguments_format != "raw":
                texts.extend(filter(_ESCAPED.search, _strings(b.arguments, [])))
    elif isinstance(item, ToolResultItem):
        texts.append(item.output)
    else:
        texts.append(item.text)


class _Content(NamedTuple):
    """A file's last full content in the history, and where the history shows it."""

    text: str | None
    """The content (None: unknown)."""
    item: Item | None
    """The history item that shows it: the read result, or the assistant message that wrote
    it."""
    shown_as: str
    """That item's text holding the content: the read's output, or the content the write call
    holds (a part of the item as it is, also where its rendered JSON escapes a line)."""

    @property
    def read(self) -> ToolResultItem | None:
        """The read result that showed the content (None when it was written)."""
        return self.item if isinstance(self.item, ToolResultItem) else None


_UNKNOWN = _Content(None, None, "")


class _Signatures:
    """A 256-bit signature of each of the first `count` texts of a list: the bit `hash(token)
    % 256` of each of its tokens (the text split at `_TOKENS`), 32 bytes per text.

    A text that contains a string holds every token of the string but its first and its last
    as a whole token (it splits where the string does: `_TOKENS` maps character by character),
    so its signature has their bits. The texts whose signature lacks one need no search: a
    search of many texts for a string none holds reads only the few that share its tokens."""

    __slots__ = ("count", "words")

    def __init__(self) -> None:
        self.count = 0
        """How many leading texts have a signature."""
        self.words = array("Q")
        """Four 64-bit words per text, in order (an `array` grows by ~1/8 at a time, where a
        numpy array would be copied whole, twice the size, to grow)."""

    def update(self, texts: list[str], count: int) -> None:
        """Sign `texts[self.count:count]` (nothing when those are signed already)."""
        words = self.words
        for text in texts[self.count : count]:
            words.extend(_signature(text.translate(_TOKENS).split()))
        self.count = max(self.count, count)

    def wanted(self, text: str) -> np.ndarray | None:
        """The bits a text that holds `text` must have; None when `text` has fewer than three
        tokens (no token of it is sure to be whole in a text that holds it)."""
        pieces = text.translate(_TOKENS).split()
        if len(pieces) < 3:
            return None
        return np.array(_signature(islice(pieces, 1, len(pieces) - 1)), dtype=np.uint64)

    def having(self, wanted: np.ndarray, low: int, high: int) -> list[int]:
        """The indexes in `[low, high)` of the texts whose signature has the `wanted` bits,
        ascending (`high <= count`)."""
        # A view of the words, let go before the next `update` (an array with a view alive
        # cannot grow).
        rows = np.frombuffer(self.words, dtype=np.uint64)[4 * low : 4 * high].reshape(-1, 4)
        return (np.flatnonzero(((rows & wanted) == wanted).all(axis=1)) + low).tolist()


def _signature(tokens: Iterable[str]) -> list[int]:
    """The four 64-bit words of the bits of `tokens` (`_Signatures`)."""
    words = [0, 0, 0, 0]
    for token in set(tokens):
        bit = hash(token) & 255
        words[bit >> 6] |= 1 << (bit & 63)
    return words


class _History:
    """One thread's history as the checker has indexed it so far.

    The engine only ever appends to a thread's history, so each request indexes just the new
    items: their texts, the last known content of each file (a read result or a write's
    content), and which of the strings asked about so far some item contains. The distinct
    tokens of all texts are indexed only once a question needs them: when strategies are
    replayed one after the other over the same log, the first one's answers serve the others
    (`_HOLDS`), which then never need them. A history that changed other than by growing at the
    end is indexed again from scratch."""

    def __init__(self) -> None:
        self.generation = 0
        """How many times the history was indexed from scratch (a view track built against
        an earlier generation is stale: the items it took for history items may be gone)."""
        self._reset()

    def _reset(self) -> None:
        self.generation += 1
        self.items: list[Item] = []
        """The history items indexed, in order (the same objects)."""
        self.texts: list[str] = []
        """The texts of the items, in parts (`_add_parts`)."""
        self.calls: dict[str, Block] = {}
        """Tool calls by call id, the latest of each id."""
        self.known: dict[str, _Content] = {}
        """Path → its last full content. Reads of a range of lines are not full contents."""
        self.indexed: set[str] = set()
        """Every distinct text of `texts[:tokenized]` (tool results are often the same file
        read again)."""
        self.tokenized = 0
        """How many leading texts have their tokens in `token_chunks`."""
        self.token_chunks: list[str] = []
        """The distinct tokens of `texts[:tokenized]` (split at `_TOKENS`) joined by spaces
        into a few strings, the newest tokens in the last, smaller ones. A token may be in
        more than one chunk until they merge (~20 % repeats at 2,000 requests): a set of the
        tokens, to leave each out of later chunks, held ~0.27 bytes per byte of the log in
        each strategy's replay (at its peak of memory) and answered nothing faster."""
        self.searched: dict[str, int] = {}
        """String → -1 once an item holds it (the history only grows: it stays found), else the
        number of items already searched without finding it."""
        self.print = 0
        """A fingerprint of `texts` (chained hashes), the key under which answers about them
        are shared (`_HOLDS`, with the number of texts)."""
        self.assistant_texts: list[str] = []
        """The parts of the assistant items alone (`_add_parts`), in order."""
        self.assistant_owners: list[AssistantItem] = []
        """The assistant item of each of those parts."""
        self.assistant_prints = array("q")
        """`assistant_prints[j]`: a fingerprint of `assistant_texts[:j + 1]` (chained hashes),
        so that what one history's parts are known to hold serves another with the same first
        parts (`_holds_own_assistant`). Shared by the histories whose parts are the same so
        far (`_CHAINS`: every strategy's run over one log), so it may be longer than
        `assistant_texts`: only its first `len(assistant_texts)` prints are this history's."""
        self.assistant_signatures = _Signatures()
        """The signatures of `assistant_texts`, made only when a search of them needs them,
        and shared like `assistant_prints` (it may sign more parts than this history's)."""
        self.assistant_items: set[AssistantItem] = set()
        """Every assistant item of `items` (items hash by identity: a set of their `id`s held
        an int object per item)."""

    def sync(self, history: Sequence[Item], grown: bool = False) -> None:
        """Index the items appended to `history` since the last call (`grown`: the caller
        only ever appends to it, so its first items are not compared with those indexed)."""
        n = len(self.items)
        if (
            len(history) < n
            or (n and history[n - 1] is not self.items[-1])
            or (not grown and _as_list(history[:n]) != self.items)  # identity, at C speed
        ):
            self._reset()
            n = 0
        for item in history[n:]:
            self._add(item)

    def _add(self, item: Item) -> None:
        texts = self.texts
        start = len(texts)
        self.items.append(item)
        _add_parts(texts, item)
        for text in texts[start:]:  # (islice would step over the `start` texts before them)
            self.print = hash((self.print, text))
        if isinstance(item, AssistantItem):
            self.assistant_items.add(item)
            for text in texts[start:]:
                self._add_assistant_part(text)
            self.assistant_owners.extend([item] * (len(texts) - start))
            for b in item.tool_calls:
                if b.call_id:
                    self.calls[b.call_id] = b
                if _is_write(b.name or ""):
                    path, written = path_of(b.arguments), _first(b.arguments, _CONTENT_KEYS)
                    if path is not None and written is not None:
                        # Its lines are shown as they are (`_add_parts`), escaped or not.
                        self.known[path] = _Content(written, item, written)
        elif isinstance(item, ToolResultItem) and not item.is_error:
            call = self.calls.get(item.call_id)
            if call is None:
                return
            name, path = call.name or "", path_of(call.arguments)
            if path is None or reads_part_of_file(call.arguments):  # a range is not the file
                return
            if editor_kind(call.arguments) == "read":  # a view: lines numbered as `cat -n` does
                self.known[path] = _Content(_viewed_text(item.output), item, item.output)
            elif _is_read(name) and not _is_write(name):
                text = _file_text(item.output)
                if text is not None:  # (None: a range, as one its arguments ask for)
                    self.known[path] = _Content(text, item, item.output)

    def _add_assistant_part(self, text: str) -> None:
        parts, prints = self.assistant_texts, self.assistant_prints
        j = len(parts)
        chained = hash((prints[j - 1] if j else 0, text))
        if j == 0:  # the chain of every history that starts with this part
            shared = _CHAINS.get(chained)
            if shared is None:
                if len(_CHAINS) >= _CHAINS_MAX:
                    _CHAINS.clear()
                shared = _CHAINS[chained] = (array("q", [chained]), _Signatures())
            self.assistant_prints, self.assistant_signatures = shared
        elif j < len(prints):
            if prints[j] != chained:  # leaves the chain it shared: a copy of its own from here
                self.assistant_prints = prints[:j]
                self.assistant_prints.append(chained)
                self.assistant_signatures = _Signatures()
        else:
            prints.append(chained)
        parts.append(text)

    def _index_tokens(self) -> None:
        """Bring `token_chunks` up to date with every text."""
        tokens: set[str] = set()
        for text in self.texts[self.tokenized :]:
            if text not in self.indexed:
                self.indexed.add(text)
                tokens.update(text.translate(_TOKENS).split())
        self.tokenized = len(self.texts)
        self._push_tokens(tokens)

    def _push_tokens(self, tokens: set[str]) -> None:
        # Merging neighbours of similar size keeps O(log) chunks for O(log) copies per token;
        # a merge leaves out the tokens both hold, so the chunks hold few repeats.
        chunks = self.token_chunks
        while chunks and len(chunks[-1]) <= 2 * sum(map(len, tokens)) + 2 * len(tokens):
            tokens.update(chunks.pop().split())
        if tokens:
            chunks.append(" ".join(tokens))

    def last_known_content(self, path: str) -> _Content:
        """The file's last full content in the history (a read result, or a write's content)."""
        return self.known.get(path, _UNKNOWN)

    def holds(self, text: str) -> bool:
        """True when some history item's text contains `text` (which holds no newline: one
        part of an item's text holds it iff the item's text does)."""
        searched = self.searched.get(text, 0)
        if searched < 0:
            return True
        # Inside one token of a text: the chunks of distinct tokens answer exactly.
        in_token = _RUN.fullmatch(text) is not None
        key = (len(self.texts), self.print, text)
        found = _HOLDS.get(key)
        if found is None:
            if in_token:
                self._index_tokens()
                found = any(map(contains, self.token_chunks, repeat(text)))
            else:
                found = _last_containing(self.texts, text, searched) is not None
            if len(_HOLDS) >= _HOLDS_MAX:
                _HOLDS.clear()
            _HOLDS[key] = found
        if found:
            self.searched[text] = -1
        elif not in_token:
            self.searched[text] = len(self.texts)
        return found


# Every strategy replayed over a log has the same history and checks the same recorded
# responses, so it asks the same questions of it: the answers are shared by history fingerprint
# (count of items, chained hash of their texts) and text. Without this each strategy would
# search the whole history again for each quoted text that it does not hold (work growing with
# the history, per request). Dropped wholesale when full: an answer is only ever recomputed.
_HOLDS: dict[tuple[int, int, str], bool] = {}
_HOLDS_MAX = 1 << 16


class _Hits:
    """Where one string is among the assistant parts of a history (`assistant_texts`): every
    part of `[low, high)` has been searched, and `parts` lists those that hold it."""

    __slots__ = ("prints", "low", "high", "parts")

    def __init__(self, prints: array, at: int) -> None:
        self.prints = prints
        """The `assistant_prints` of a history whose parts were searched (its first `high`
        parts are the ones searched)."""
        self.low = at
        self.high = at
        self.parts = array("q")
        """The parts of `[low, high)` that hold the string, ascending (an array: thousands of
        strings are asked about, and a list held an int object per part)."""


# Every strategy's view holds most of the history's assistant items as they are (strategies cut
# tool results, not the agent's own messages), and every strategy replayed over a log asks
# about the same strings at the same requests: where a string is among those items is searched
# once for all of them, the rest of each view (results, cut copies, summaries) per strategy.
# Without this each strategy searched its whole view, agent messages included, for every line
# that a view hides (work growing with the view, per request). Dropped wholesale when full.
_IN_ASSISTANTS: dict[str, _Hits] = {}
# One array of chained prints per sequence of assistant parts (keyed by its first print),
# shared by the histories that have those parts, so that the `_Hits` referring to it keep one
# array alive, not one per strategy's run; and the signatures of those parts, made once.
_CHAINS: dict[int, tuple[array, _Signatures]] = {}
_CHAINS_MAX = 1 << 12


def _same_start(a: array, b: array, n: int) -> bool:
    """True when two histories' first `n` assistant parts are the same (chained prints)."""
    return a is b or n == 0 or a[n - 1] == b[n - 1]


def _holds_own_assistant(history: _History, text: str, held: dict[Item, int]) -> bool:
    """True when one of `history`'s assistant items that holds `text` is in `held` (a view's
    items by identity). The parts holding `text` are found from the newest back, only as far
    as needed, and shared through `_IN_ASSISTANTS` with every history whose first parts are
    the same (another strategy's run over the same log)."""
    texts, prints = history.assistant_texts, history.assistant_prints
    owners = history.assistant_owners
    count = len(texts)
    hits = _IN_ASSISTANTS.get(text)
    if hits is None or not _same_start(hits.prints, prints, min(hits.high, count)):
        if len(_IN_ASSISTANTS) >= _HOLDS_MAX:
            _IN_ASSISTANTS.clear()
        hits = _IN_ASSISTANTS[text] = _Hits(prints, count)
    if count < hits.low:
        # Asked of a shorter history than any before (another strategy's earlier request)
        # whose parts hold no hit known: searched here, not shared (the parts between would
        # be missing from `[low, high)`).
        hits = _Hits(prints, count)
    signatures, wanted = history.assistant_signatures, None
    if hits.high < count or hits.low > 0:  # a search is due: the signatures narrow it
        signatures.update(texts, count)
        wanted = signatures.wanted(text)
    if hits.high < count:  # parts added since: searched in full (each only once)
        if wanted is None:
            new = map(contains, texts[hits.high :], repeat(text))
            hits.parts.extend(compress(range(hits.high, count), new))
        else:
            having = signatures.having(wanted, hits.high, count)
            new = map(contains, map(texts.__getitem__, having), repeat(text))
            hits.parts.extend(compress(having, new))
        hits.high, hits.prints = count, prints
    parts = hits.parts
    known = parts if not parts or parts[-1] < count else parts[: bisect_left(parts, count)]
    if any(map(held.__contains__, map(owners.__getitem__, known))):
        return True
    if wanted is not None:  # back from `low`, windows growing 4x: what is asked is often recent
        size = _FIRST_WINDOW
        while hits.low > 0:
            top = hits.low
            bottom = max(0, top - size)
            having = signatures.having(wanted, bottom, top)
            having.reverse()
            holding = map(contains, map(texts.__getitem__, having), repeat(text))
            for j in compress(having, holding):  # the substring tests at C speed
                hits.low = j
                parts.insert(0, j)
                if owners[j] in held:
                    return True
            hits.low = bottom
            size *= 4
        return False
    while hits.low > 0:
        j = _last_containing(texts, text, 0, hits.low)
        hits.low = 0 if j is None else j
        if j is None:
            return False
        parts.insert(0, j)
        if owners[j] in held:
            return True
    return False


_FIRST_WINDOW = 64
"""Parts the backward search of the agent's messages reads before its window grows."""


class _ViewTrack:
    """The last view checked for one thread, and where strings asked about appear in it.

    When the view holds most of the history's own assistant items as they are (strategies cut
    tool results, not the agent's messages), those are not searched here: where a string is
    among them is known from the history (`_holds_own_assistant`, shared by every strategy),
    so only the view's other items (results, cut or changed copies, summaries) are searched.
    A view holding few of them (a compaction's, a window's) is searched whole: its own items
    are few, and the history's would be many.

    Views of consecutive requests mostly share a long prefix of the very same item objects (a
    strategy appends, or rewrites only near the end; a compaction or a sliding window starts
    over). Each sync records the first position that changed. A memo "`text` is in the item at
    position p" stays true while no later sync changed a position at or before p, or while
    that very item is still at p (a rule replaced an earlier item in place); a memo "no item
    before position p holds `text`" stays true while no later sync changed a position before
    p, and then only the items from p on (or from the first changed position, if lower) are
    searched again."""

    def __init__(self, generation: int = 0) -> None:
        self.generation = generation
        """The history generation (`_History.generation`) the view was synced against."""
        self.items: list[Item] = []
        """The last view checked (the same objects)."""
        self.texts: list[str] = []
        """The texts of its items, in parts (`_add_parts`)."""
        self.starts = array("q")
        """`starts[p]`: the index in `texts` of the first part of the item at position p."""
        self.others: list[str] = []
        """The same, but for the history's own assistant items (which have no part here)."""
        self.other_starts = array("q")
        """`other_starts[p]`: the index in `others` of the first part of the item at position
        p (or of the next item's, for an item without parts there)."""
        self.own_held = 0
        """How many of the history's own assistant items the view holds."""
        self.syncs = 0
        """Number of views synced so far."""
        self.cut_sync: list[int] = []
        self.cut_at: list[int] = []
        """The syncs that changed (or removed) an item of the previous view and the first
        position each changed, kept as a stack whose positions increase (a cut hides every
        earlier one at or after its position), so that the lowest position changed after a
        given sync is the first entry after it (one bisection, however many syncs since)."""
        self.memo: dict[str, tuple[int, int, bool, Item | None]] = {}
        """String → (sync when last searched, found: the position of an item holding it, else
        the view's length then, found, the item holding it)."""
        self.held: dict[Item, int] = {}
        """Item → how many times the current view holds that very object (items hash by
        identity)."""
        self.results: list[object] = []
        """The event index of each tool result among the leading items (`_NOT_RESULT` for
        other items), extended only when a lookup needs it (`first_result`)."""

    def sync(self, view: list[Item], history: _History) -> None:
        """Make `view` the current view, keeping the work done for the prefix it shares with
        the previous one. `history` (the thread's, synced) tells its own assistant items."""
        old = self.items
        same = shared_prefix(old, view)
        self.syncs += 1
        if same < len(old):
            while self.cut_at and self.cut_at[-1] >= same:
                self.cut_at.pop()
                self.cut_sync.pop()
            self.cut_sync.append(self.syncs)
            self.cut_at.append(same)
            del self.texts[self.starts[same] :]  # (same < len(old): an item was there)
            del self.others[self.other_starts[same] :]
            held, own = self.held, history.assistant_items
            for gone in old[same:]:
                if held[gone] == 1:
                    del held[gone]
                else:
                    held[gone] -= 1
                self.own_held -= gone in own
            del old[same:], self.starts[same:], self.other_starts[same:], self.results[same:]
        added = view[same:]
        old.extend(added)
        texts, starts, held = self.texts, self.starts, self.held
        others, other_starts, own = self.others, self.other_starts, history.assistant_items
        for item in added:
            starts.append(len(texts))
            other_starts.append(len(others))
            _add_parts(texts, item)
            if item in own:
                self.own_held += 1
            else:
                _add_parts(others, item)
            held[item] = held.get(item, 0) + 1

    def first_result(self, event_index: int) -> ToolResultItem | None:
        """The first tool result of the current view carrying `event_index`, found at C speed
        (`list.index`) over event indexes gathered once per item the view added."""
        items, results = self.items, self.results
        if len(results) < len(items):
            results.extend(
                i.event_index if isinstance(i, ToolResultItem) else _NOT_RESULT
                for i in items[len(results) :]
            )
        try:
            return items[results.index(event_index)]  # type: ignore[return-value]
        except ValueError:
            return None

    def holds_item(self, item: Item) -> bool:
        """True when the current view holds `item` itself (not a copy cut down or changed)."""
        return item in self.held

    def shows(self, text: str, history: _History) -> bool:
        """True when some item of the current view contains `text` (which holds no newline).
        `history`: the thread's, synced, which tells where its assistant items hold `text`."""
        stop = 0  # the items before it are known not to hold `text`
        memo = self.memo.get(text)
        if memo is not None:
            sync, position, found, item = memo
            # The lowest position changed by the syncs since the memo (none if it is this one's).
            after = bisect_right(self.cut_sync, sync)
            lowest = self.cut_at[after] if after < len(self.cut_at) else position + 1
            if found and (
                position < lowest or (position < len(self.items) and self.items[position] is item)
            ):
                return True
            if not found:
                stop = min(position, lowest)
        starts, texts = self.starts, self.texts
        if 2 * self.own_held >= len(history.assistant_items) > 0:  # see the class's docstring
            if _holds_own_assistant(history, text, self.held):
                return True
            starts, texts = self.other_starts, self.others
        part = _last_containing(texts, text, starts[stop] if stop < len(starts) else len(texts))
        if part is None:
            self.memo[text] = (self.syncs, len(self.items), False, None)
            return False
        # The item of that part: the last one starting at or before it (an item without
        # blocks has no part, and starts where the next one does).
        hit = bisect_right(starts, part) - 1
        self.memo[text] = (self.syncs, hit, True, self.items[hit])
        return True


_NOT_RESULT = object()
"""`_ViewTrack.results` entry of an item that is not a tool result (equal to no index)."""


class _Thread:
    """What the checker keeps of one thread between requests."""

    def __init__(self, history: Sequence[Item]) -> None:
        self.source = history
        """The caller's history object (held, so its id stays this thread's key)."""
        self.history = _History()
        self.view = _ViewTrack(self.history.generation)


class _Request:
    """The hidden-text test for one request; the view is synced only if a check needs it."""

    def __init__(
        self, thread: _Thread, view: Sequence[Item], head: str = "", cwd: str = ""
    ) -> None:
        self.thread = thread
        self._view: Sequence[Item] | None = view
        self.head = head
        """What the request sends besides its messages (system prompt, tool definitions)."""
        self.cwd = cwd.rstrip("/") + "/" if cwd.strip("/") else ""
        """The run's working directory with a final `/` (empty: unknown, or the root)."""

    def hidden(self, text: str) -> bool:
        """True when `text` is in the history but not in the view.

        Every text asked about is one stripped line or one quotable piece, so it holds no
        newline: it is in the newline-joined texts of some items iff one item's text holds it,
        which lets each item (and each memo) be searched on its own."""
        history = self.thread.history
        if not text or not history.holds(text):
            return False  # the history's index answers most of these without a search
        if text in self.head or self.view().shows(text, history):
            return False
        # An absolute path under the working directory, which the harness tells the agent, is
        # shown when its relative form is (`/repo/src/api.js`: `src/api.js` in a listing).
        relative = text.removeprefix(self.cwd) if self.cwd else text
        return relative == text or _QUOTABLE.fullmatch(relative) is None or not (
            relative in self.head or self.view().shows(relative, history)
        )

    def view(self) -> _ViewTrack:
        """The thread's view track, synced with this request's view."""
        if self._view is not None:
            thread, history = self.thread, self.thread.history
            if thread.view.generation != history.generation:  # indexed again from scratch
                thread.view = _ViewTrack(history.generation)
            thread.view.sync(_as_list(self._view), history)
            self._view = None
        return self.thread.view


# Every strategy replayed over a log checks the same recorded writes against the same contents
# (the very string objects of the log, so hashing them is free after the first time): the diff
# is computed once per write, not once per strategy. Bounded by the characters it holds, since
# in a batch it would otherwise keep earlier sessions' file contents alive.
_CHANGES: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()
_CHANGES_BUDGET = 1 << 25
"""Characters of (old, new) texts the memo may hold (~32 MB)."""
_changes_chars = 0


def _change_context(old: str, new: str) -> tuple[str, ...]:
    """Old lines a whole-file write changed, with one line of context on each side."""
    global _changes_chars
    key = (old, new)
    hit = _CHANGES.get(key)
    if hit is not None:
        _CHANGES.move_to_end(key)
        return hit
    a, b = old.splitlines(), new.splitlines()
    lines: list[str] = []
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo, hi = max(0, i1 - 1), min(len(a), max(i2, i1) + 1)
        lines.extend(a[lo:hi])
    result = tuple(ln.strip() for ln in dict.fromkeys(lines) if ln.strip())
    _CHANGES[key] = result
    _changes_chars += len(old) + len(new)
    while _changes_chars > _CHANGES_BUDGET and len(_CHANGES) > 1:
        (gone_old, gone_new), _ = _CHANGES.popitem(last=False)
        _changes_chars -= len(gone_old) + len(gone_new)
    return result


_SHARED_FOR = 0
"""`id` of the session whose replays the shared answers serve (`share_answers_for`)."""


def share_answers_for(session: object) -> None:
    """Keep what checkers share for one session at a time: drop it when `session` is another
    than the last one replayed. A batch replays log after log (one strategy at a time, each a
    replay of its own); the answers about one log serve its strategies, and would otherwise
    pile up, log after log, to the bounds of those memos (`_IN_ASSISTANTS` keeps the prints
    of each log's messages alive). A new session that got a freed one's `id` keeps the old
    answers: they are checked against its texts (fingerprints) before any is used."""
    global _SHARED_FOR
    if id(session) != _SHARED_FOR:
        forget_shared_answers()
        _SHARED_FOR = id(session)


def forget_shared_answers() -> None:
    """Forget what checkers share between replays in this process (answers about histories,
    the lines each recorded write changed): the next replay finds them again, as a fresh
    process would (`replay bench` times cold runs)."""
    global _changes_chars
    _HOLDS.clear()
    _IN_ASSISTANTS.clear()
    _CHAINS.clear()
    _CHANGES.clear()
    _changes_chars = 0


class EvidenceChecker:
    """Checks each request's recorded response against the view a strategy built for it.

    One checker serves one replay: it keeps, per thread (keyed by the history list the engine
    passes, which only grows), the indexes that make each request cost about the new items and
    the changed part of the view rather than the whole history."""

    def __init__(self) -> None:
        self._threads: dict[int, _Thread] = {}

    def check(
        self,
        history: Sequence[Item],
        view: Sequence[Item],
        response: AssistantItem | None,
        request_index: int,
        request_id: str,
        *,
        grown: bool = False,
        head: str = "",
        cwd: str = "",
    ) -> list[BlindAction]:
        """The blind actions of `response`. `grown`: the caller only ever appends to `history`
        (the same list at every request, as the engine's), which then is not compared item by
        item with what was indexed at the previous request (O(history) per request). `head`:
        the text the request sends besides its messages (system prompt, tool definitions,
        working directory), which no strategy hides; `cwd`: the working directory, under which
        an absolute path is shown when its relative form is."""
        if response is None:
            return []
        prose = [b.text for b in response.blocks if b.type == "text" and b.text]
        if not response.tool_calls and not prose:
            return []
        if view == history:  # items compare by identity: one C-speed pass
            return []  # the view is the history: nothing can be hidden
        thread = self._threads.get(id(history))
        if thread is None or thread.source is not history:
            thread = self._threads[id(history)] = _Thread(history)
        thread.history.sync(history, grown)
        request = _Request(thread, view, head, cwd)
        found: list[BlindAction] = []
        for call in response.tool_calls:
            name = call.name or ""
            if _is_write(name) and _edits_a_file(call.arguments):
                found.extend(self._write(call, view, request, request_index, request_id))
            else:
                found.extend(self._quotes(call, request, request_index, request_id))
        if prose:
            found.extend(self._prose(prose, request, request_index, request_id))
        # One row per loss: the edits of one response to one stubbed file share its read.
        return list(dict.fromkeys(found))

    def _write(self, call, view, request, request_index, request_id) -> list[BlindAction]:
        history = request.thread.history
        path, old_lines = _old_lines(call.arguments)
        known = history.last_known_content(path) if path is not None else _UNKNOWN
        needed: Sequence[str] = ()
        if old_lines is not None:
            needed = old_lines
        elif known.text is not None:
            new = _first(call.arguments, _CONTENT_KEYS)
            if new is not None:
                needed = _change_context(known.text, new)
        if needed and known.item is not None and request.view().holds_item(known.item):
            # The item that last showed the file is in the view as it was: what it holds is
            # shown, without a search of the view (the lines in the rest are searched for).
            needed = [ln for ln in needed if ln not in known.shown_as]
        hidden = [ln for ln in needed if request.hidden(ln)]
        if not hidden:  # one action per call: a deleted file counts where no edit did
            return self._deletes(call, request, request_index, request_id)
        actions = [
            BlindAction(request_index, request_id, call.name or "", "hidden-edit-target", path,
                        _short("\n".join(hidden)))
        ]
        read = known.read
        if path is not None:
            # The view's first tool result of that event (C-speed lookup: views grow long).
            shown = None if read is None else request.view().first_result(read.event_index)
            if shown is not None and shown.original_chars is not None:
                actions.append(
                    BlindAction(request_index, request_id, call.name or "", STUBBED_READ, path,
                                _short(shown.output))
                )
        return actions

    def _deletes(self, call, request, request_index, request_id) -> list[BlindAction]:
        """A patch's deleted files named only in hidden text: deleting a file relies on
        nothing but its name, which the call quotes as a shell `rm` would."""
        files = _deleted_files(call.arguments)
        hidden = _hidden_pieces(files, request, distinctive=True)
        if not hidden:
            return []
        path = next(f for f in files if hidden[0] in f)
        return [BlindAction(request_index, request_id, call.name or "", "hidden-quote", path,
                            _short(", ".join(hidden)))]

    def _prose(self, texts, request, request_index, request_id) -> list[BlindAction]:
        """The response's own text quoting something only hidden text held (an error code, a
        path, a name), as a tool call's arguments would."""
        hidden = _hidden_pieces(texts, request, distinctive=True)
        if not hidden:
            return []
        return [BlindAction(request_index, request_id, "", HIDDEN_MENTION, None,
                            _short(", ".join(hidden)))]

    def _quotes(self, call, request, request_index, request_id) -> list[BlindAction]:
        # As in prose, only pieces that name something exact (`commit`, `--oneline`, `printf`
        # recur in any text: a third of the rows were such words), and quoted phrases whole.
        strings = _strings(call.arguments, [])
        hidden = _hidden_pieces(strings, request, distinctive=True)
        hidden += [p for p in _phrases(strings) if p not in hidden and request.hidden(p)]
        if not hidden:
            return []
        return [
            BlindAction(request_index, request_id, call.name or "", "hidden-quote",
                        path_of(call.arguments), _short(", ".join(hidden)))
        ]
