"""What a batch replays with, and the keys that tell whether an earlier result still holds."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

BATCH_FORMAT = 5
"""Version of the dataset's rows and of the incremental cache; bump when either changes."""

DEFAULT_CHAIN_BYTES = 512 * 1024 * 1024
"""A chain of sessions sharing one cache is cut after this many bytes of logs (bounds the block
table a worker keeps for a chain)."""


@dataclass(frozen=True)
class BatchOptions:
    """How every file of a batch is replayed. Plain values only: it is sent to worker processes
    and Ray tasks, and it is part of the incremental-cache key."""

    strategies: str = "all"
    """`all` or comma-separated strategy names."""
    provider: str | None = None
    """Simulate every request on this provider."""
    model: str | None = None
    """Simulate every request with this model."""
    context_window: int | None = None
    """The context window (tokens) strategies fit into, for every model (None: the model's)."""
    client: str | None = None
    """Client profile (breakpoint placement)."""
    cache_rules: str | None = None
    """Path of a user cache-rule file."""
    prices: tuple[str, ...] = ()
    """`--price` overrides as typed (`MODEL=input:IN,output:OUT`)."""
    ttl: str | None = None
    """`5m` or `1h`: every breakpoint's TTL, where the client picks one (Anthropic-style
    caches; other caches ignore it)."""
    strict: bool = False
    """Fail a file at its first malformed line (lenient: skip and count)."""
    per_request: bool = False
    """Also write one row per simulated request."""
    share_cache: bool = True
    """Replay sessions of one scope through one shared provider cache."""
    chain_bytes: int = DEFAULT_CHAIN_BYTES
    """Cut a shared-cache chain after this many bytes of logs."""
    tokenizers: str | None = None
    """Path of a user tokenizer file (schema of `pricing/tokenizers.json`) every worker counts
    with; `run_batch` fills in the one in force where it starts (`use_tokenizers`,
    `REPLAY_TOKENIZERS`), which spawned workers and Ray tasks would not otherwise see."""
    plugin_files: tuple[str, ...] = ()
    """Strategy plug-in files (`load_strategy_file`, as given) every worker loads before it
    resolves the strategies; `run_batch` fills in those loaded where it starts, which spawned
    workers and Ray tasks would not otherwise have."""


@cache
def replay_version() -> str:
    try:
        return metadata.version("replay")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


@cache
def _prices_version() -> str:
    try:
        return metadata.version("genai-prices")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _file_digest(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def scan_key(opts: BatchOptions) -> str:
    """What a file's scan (format, session id, times, cache scope) depends on."""
    return _digest(
        ["scan", BATCH_FORMAT, replay_version(), _code_digest(), opts.strict, opts.provider]
    )


@cache
def _data_digest() -> str:
    """Digest of replay's built-in data files (cache rules, tokenizers, context windows): a
    source checkout changes them without a new version number."""
    from replay._data import data_dir

    root = data_dir()
    files = sorted(p for p in root.rglob("*.json") if p.is_file())
    return _digest([[str(p.relative_to(root)), _file_digest(str(p))] for p in files])


@cache
def _code_digest() -> str:
    """Digest of replay's own modules: a source checkout changes how a log is read, replayed or
    priced without a new version number, and a result cached by other code must not be reused."""
    root = Path(__file__).resolve().parents[1]
    files = sorted(p for p in root.rglob("*.py") if p.is_file())
    return _digest([[str(p.relative_to(root)), _file_digest(str(p))] for p in files])


def replay_key(opts: BatchOptions) -> str:
    """What a file's replayed rows depend on, besides the file and its cache group: every
    option, the content of the user's cache-rule, tokenizer and plug-in files and of the
    built-in data files, replay's own code, and the versions of replay and of the prices."""
    fields = asdict(opts)
    fields["cache_rules"] = _file_digest(opts.cache_rules)
    fields["tokenizers"] = _file_digest(opts.tokenizers)
    # Their code, not their paths: an edited plug-in gives other rows.
    fields["plugin_files"] = [_file_digest(path) for path in opts.plugin_files]
    fields["plugin_code"] = _plugin_code(opts.strategies)
    versions = [replay_version(), _code_digest(), _prices_version(), _data_digest()]
    return _digest(["replay", BATCH_FORMAT, *versions, fields])


def _plugin_code(strategies: str) -> list[tuple[str, str]]:
    """Digest of the code of each plug-in among `strategies` that is no file (those are
    `plugin_files`): an installed package's or the calling program's. A package upgraded or
    edited in place, or a script that changed, replays its strategies with other code."""
    import inspect

    from replay.strategies import resolve

    code: dict[str, str] = {}
    for named in resolve(strategies):
        spec = named.spec
        if not spec.is_plugin or spec.origin.startswith("file:"):
            continue
        try:  # the function itself: a notebook's cell has no file to read
            source = inspect.getsource(spec.build)
        except (OSError, TypeError):
            source = ""
        top = (getattr(spec.build, "__module__", None) or "").split(".")[0]
        code[spec.origin] = _digest([source, _module_files_digest(top)])
    return sorted(code.items())


def _module_files_digest(name: str) -> str:
    """Digest of the files of module `name`: every module of a package, else its one file."""
    import sys

    module = sys.modules.get(name)
    roots = [Path(p) for p in getattr(module, "__path__", None) or []]
    file = getattr(module, "__file__", None)
    files = sorted(p for root in roots for p in root.rglob("*.py") if p.is_file())
    if not roots and file:
        files = [Path(file)]
    return _digest([[str(p), _file_digest(str(p))] for p in files])


def horizon_seconds(opts: BatchOptions) -> float:
    """The longest a cache entry can live idle under any rule in force (built-in rule files and
    the user's): sessions further apart than this cannot read each other's entries."""
    from replay._errors import ReplayError
    from replay.cache import builtin_rule_files, load_rules_file

    books = []
    for path in builtin_rule_files():
        try:
            books.append(load_rules_file(path))
        except ReplayError:  # a broken rule file fails the files that need it, not the batch
            continue
    if opts.cache_rules:
        books.append(load_rules_file(opts.cache_rules))
    longest = 3600.0
    for book in books:
        for rule in book.rules:
            # (Gemini's cachedContents live `explicit_ttl_seconds`, the client's choice.)
            if rule.rule.startswith("ttl_seconds") or rule.rule == "explicit_ttl_seconds":
                try:
                    longest = max(longest, float(rule.value))
                except (TypeError, ValueError):
                    continue
    return longest
