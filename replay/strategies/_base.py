"""The strategy interface and the registry that turns names into strategies.

A strategy is anything called once per request as `strategy(history, ctx) -> View | list[Item]`:
`history` is every model-visible item of the thread so far (full, lossless), `ctx` says where in
the run we are. It may keep state between calls (a class instance, a closure); the engine makes a
fresh instance for every replayed thread. A built-in instance called on another history than the
one it saw grown (from Python) is rebuilt first, so it sends what a new instance would.

Names follow `<family>-<param>[-<modifier>]`, e.g. `truncate-500`, `age-truncate-500-keep-3`,
`compact-at-12000-structured`. Each family registers a `StrategySpec` with a regular expression;
the registry parses a name into parameters and builds the strategy.

Parameters can also be overridden without a pattern slot for them:

- inline, after the name in brackets: `opencode-prune-40k-20k[protected=skill+todo]`
  (several as `[a=1,b=2]`; list values joined with `+`);
- per family, with `resolve(names, overrides={"opencode-prune": {"protect": "30k"}})` (the CLI's
  `--set opencode-prune.protect=30k`), which wins over both the name and the brackets.

Values are read by the type of the parameter's default: ints accept `40k` (x1000, or the
family's own unit), `40_000`; floats accept `0.9` or `90%`; booleans `true/false/yes/no/1/0`;
tuples a `+`- or `,`-separated list. A built strategy whose parameters differ from what its
name says is named `<name>[k=v,...]`, so every row of a result names exactly what ran. Each
parameter of a built-in family declares the values it accepts (`StrategySpec.bounds`); a value
outside them is refused when the name is parsed, with the strategy, parameter and range.

`all` expands to the canonical names of the built-in families (their shipped defaults);
`plugins` expands to the names of every loaded plug-in (`--strategy-file`, entry points in the
`replay.strategies` group; see `_plugins.py`).
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cache
from typing import Any, Protocol

from replay._errors import ReplayError
from replay.log import ToolDef, Usage
from replay.strategies._view import CacheClass, Item, View


@dataclass
class StrategyContext:
    """What a strategy may know at a request besides the history."""

    request_index: int
    """0-based index of this request in the log (file order, all threads), as
    `RequestRecord.request_index`."""
    ts: datetime
    """When the request was sent."""
    model: str
    """Model of the request."""
    context_window: int
    """The model's context window in tokens."""
    count_tokens: Callable[[str], int]
    """Token count of a text for this model (memoized)."""
    system: str = ""
    """System prompt."""
    tools: Sequence[ToolDef] = ()
    """Tool definitions."""
    previous_usage: Usage | None = None
    """Usage of the previous request of this thread as simulated under this strategy (what a
    harness reads from the provider's last response to decide whether to compact)."""
    previous_ts: datetime | None = None
    """Start of the previous request of this thread."""
    last_answer_ts: datetime | None = None
    """When the newest answer of this thread before this request was logged (its assistant
    message's `ts`); None before the first."""
    logged_summaries: Sequence[Any] = ()
    """Compactions recorded in the log up to now (their summaries can be reused)."""
    logged_clears: frozenset[int] = frozenset()
    """Event indexes of the tool results the harness had cleared from its context by this
    request (`cleared_at` no later than `ts`): what `recorded` shows cleared."""
    hidden_tokens: int = 0
    """Tokens of the prompt prefix the log does not hold (system prompt, tool schemas an
    adapter estimated from the usage): part of every request's size."""
    message_overhead: int = 0
    """Framing tokens the model family's chat template adds per message (`replay providers`
    shows them; pricing/tokenizers.json): part of a request's size as it is billed."""
    tool_call_overhead: int = 0
    """Framing tokens it adds per tool call."""


class Strategy(Protocol):
    def __call__(self, history: Sequence[Item], ctx: StrategyContext) -> View | list[Item]: ...


CACHE_CLASSES: tuple[CacheClass, ...] = ("append-only", "freeze-once", "churn", "churn-tail")


def _num(value: float) -> str:
    return f"{value:g}" if isinstance(value, float) else f"{value:,}".replace(",", "_")


@dataclass(frozen=True)
class Bounds:
    """The values one parameter accepts: a numeric range and/or a set of words.

    Checked whenever a name is parsed (from the name itself, `[...]` or `--set`), so a value
    the strategy cannot run with is refused with a message, never a traceback mid-replay."""

    low: float | None = None
    """Smallest accepted number (None: no lower bound)."""
    high: float | None = None
    """Largest accepted number (None: no upper bound)."""
    low_open: bool = False
    """True: `low < x` rather than `low <= x`."""
    high_open: bool = False
    """True: `x < high` rather than `x <= high`."""
    words: tuple[str, ...] = ()
    """Words accepted instead of a number (`auto`, `all`), or the only choices when the range
    is empty (`structured`, `freeform`)."""
    pct: bool = False
    """Also accept `<N>pct` (a percentage of the window) with 0 < N <= 100."""
    whole: bool = False
    """Numbers (and an `<N>pct`'s N) must be whole: a count of tokens or items that the
    parameter's word default (`auto`, `90pct`) cannot type as an integer."""

    @property
    def numeric(self) -> bool:
        return self.low is not None or self.high is not None

    def describe(self) -> str:
        """The accepted values in words: `≥ 1`, `0 < x ≤ 1`, `≥ 1 or auto`, `one of: a, b`."""
        parts: list[str] = []
        if self.low is not None and self.high is not None:
            lo, hi = ("<" if self.low_open else "≤"), ("<" if self.high_open else "≤")
            parts.append(f"{_num(self.low)} {lo} x {hi} {_num(self.high)}")
        elif self.low is not None:
            parts.append(f"{'>' if self.low_open else '≥'} {_num(self.low)}")
        elif self.high is not None:
            parts.append(f"{'<' if self.high_open else '≤'} {_num(self.high)}")
        if self.pct:
            parts.append("Npct with 0 < N ≤ 100")
        if self.whole and parts:
            parts[0] = "a whole number " + parts[0]
        if not parts:
            return "one of: " + ", ".join(self.words) if self.words else "any value"
        return " or ".join([*parts, *self.words])

    def in_range(self, value: float) -> bool:
        above = self.low is None or (value > self.low if self.low_open else value >= self.low)
        below = self.high is None or (value < self.high if self.high_open else value <= self.high)
        return above and below

    def check(self, value: Any, kilo: int = 1000) -> Any:
        """`value` if accepted (a numeric word like `8k` read as a number), else ValueError."""
        if isinstance(value, str) and value in self.words:
            return value
        if isinstance(value, str) and self.pct and value.endswith("pct"):
            number = _number(value[:-3])
            if number is not None and 0 < number <= 100 and self._whole_enough(number):
                # as the strategy reads it (`50.0pct` → `50pct`)
                return f"{int(number) if self.whole else number}pct"
            raise ValueError(value)
        if isinstance(value, bool) or not self.numeric:
            raise ValueError(value)
        number = _number(value, kilo) if isinstance(value, str) else value
        if not isinstance(number, int | float) or not self.in_range(number):
            raise ValueError(value)
        if not self._whole_enough(number):
            raise ValueError(value)
        return int(number) if self.whole else number

    def _whole_enough(self, number: float) -> bool:
        return not self.whole or number == int(number)


AT_LEAST_0 = Bounds(low=0)
"""Counts, sizes and thresholds where 0 means none / off / always."""
AT_LEAST_1 = Bounds(low=1)
"""Caps and windows that must hold something."""
PERCENT = Bounds(low=1, high=100)
"""A percentage of the context window, as a whole number."""
FRACTION = Bounds(low=0, high=1)
"""A share, 0 to 1 (accepts `30%`)."""


@dataclass(frozen=True)
class StrategySpec:
    """One family of strategies: how to parse its names and build an instance."""

    family: str
    pattern: str
    """Regex for the full name; named groups are the parameters."""
    build: Callable[..., Strategy]
    """Called with the parsed parameters (ints where they look like ints)."""
    cache_class: CacheClass
    rule: str
    """One-line rule."""
    defaults: dict[str, Any] = field(default_factory=dict)
    canonical: tuple[str, ...] = ()
    """Names this family contributes to `--strategies all`."""
    source: str = ""
    """Where the rule comes from (article, repo, docs)."""
    kilo: Mapping[str, int] = field(default_factory=dict)
    """Per-parameter value of the `k` suffix in names (default 1,000; pi's `16k` is 16,384)."""
    origin: str = "builtin"
    """`builtin`, or where a plug-in came from (`file:PATH`, `entry-point:NAME`, `code:MODULE`
    for one registered by the calling program)."""
    bounds: Mapping[str, Bounds] = field(default_factory=dict)
    """Per-parameter accepted values; a value outside them is refused when the name is parsed
    (every built-in parameter declares them; a plug-in's parameters without bounds are passed
    through as given)."""
    api: str = ""
    """For a mechanism a provider runs on its side, whose API offers it: `anthropic` (the
    Messages API, Claude models) or `openai` (the Responses API). Empty for a harness's own
    rule, which a client can run against any provider."""

    @property
    def is_plugin(self) -> bool:
        return self.origin != "builtin"

    def parameters(self) -> dict[str, Any]:
        """Every parameter `build` accepts, with its default (`defaults` wins)."""
        params: dict[str, Any] = {}
        try:
            signature = inspect.signature(self.build)
        except (TypeError, ValueError):
            signature = None
        if signature is not None:
            for p in signature.parameters.values():
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    params[p.name] = None if p.default is p.empty else p.default
        params.update(self.defaults)
        return params

    def accepts_any(self) -> bool:
        try:
            signature = inspect.signature(self.build)
        except (TypeError, ValueError):
            return True
        return any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())


@dataclass
class NamedStrategy:
    """A built strategy with its name and declared cache class."""

    name: str
    spec: StrategySpec
    params: dict[str, Any]

    def instantiate(self) -> Strategy:
        """A new instance, for one thread's history. A built-in one given another history than
        the one it saw grown is rebuilt first (`OneHistory`); a plug-in's state is its own."""
        if self.spec.is_plugin:  # the user's code: its mistakes are reported as theirs
            from replay.strategies._plugins import build_guarded

            return build_guarded(self)
        from replay.strategies._common import OneHistory

        return OneHistory(lambda: self.spec.build(**self.params))


_REGISTRY: dict[str, StrategySpec] = {}


def register(spec: StrategySpec) -> StrategySpec:
    """Add a family (a plug-in may not take a built-in's family, names or pattern) and return
    it as registered. A spec built by code outside replay's own family modules is a plug-in
    (origin `code:MODULE`) even when it does not say so: `--strategies all` stays the
    built-ins, whatever else the calling program registered."""
    if spec.cache_class not in CACHE_CLASSES:
        raise ReplayError(
            f"strategy family {spec.family!r}: cache_class {spec.cache_class!r} is not one of "
            + ", ".join(CACHE_CLASSES)
        )
    module = getattr(spec.build, "__module__", None) or "?"
    if not spec.is_plugin and module not in _BUILTIN_MODULES:
        spec = replace(spec, origin=f"code:{module}")
    if spec.is_plugin:
        _load_builtin()
        _refuse_builtin_clash(spec)
        _refuse_unrunnable_names(spec)
        earlier = _REGISTRY.get(spec.family)
        if earlier is not None and earlier.origin != spec.origin:
            # The later one would run under the name the user meant for the first.
            raise ReplayError(
                f"plug-in {spec.origin}: strategy family {spec.family!r} is already taken by "
                f"plug-in {earlier.origin}; give one of them another name"
            )
    _REGISTRY[spec.family] = spec
    return spec


LIST_WORDS = {"all": "`all`: the built-ins", "plugins": "`plugins`: every loaded plug-in"}
"""Words a strategy list expands (`resolve`): no strategy may be named so."""


def _refuse_unrunnable_names(plugin: StrategySpec) -> None:
    """The names `plugins` runs (`plugin_names`: its canonical names, else its family) must be
    names its own pattern accepts: `-s plugins` failed on them as unknown strategies, and
    `replay strategies` listed names that could not run."""
    pattern = _name_pattern(plugin.pattern)
    for name in plugin.canonical or (plugin.family,):
        if not pattern.fullmatch(name):
            what = "canonical name" if plugin.canonical else "family name (it has no canonical)"
            raise ReplayError(
                f"plug-in {plugin.origin}: its {what} {name!r} does not match its own pattern "
                f"{plugin.pattern!r}, so it cannot run by that name; give it canonical names "
                "the pattern accepts"
            )


def _refuse_builtin_clash(plugin: StrategySpec) -> None:
    """A plug-in may not take a built-in's family, names or pattern: built-ins are matched
    first, so such a plug-in would never run while the results carried its name."""
    where = f"plug-in {plugin.origin}"
    names = dict.fromkeys((*plugin.canonical, plugin.family))
    for name in names:
        if name in LIST_WORDS:  # `all` would run the built-ins instead of it
            raise ReplayError(
                f"{where}: name {name!r} is a word of strategy lists ({LIST_WORDS[name]}); "
                "give the plug-in another name"
            )
    for builtin in (s for s in _REGISTRY.values() if not s.is_plugin):
        if plugin.family == builtin.family:
            raise ReplayError(f"{where}: {plugin.family!r} is a built-in strategy family")
        for name in names:
            if _name_pattern(builtin.pattern).fullmatch(name):  # as names are parsed
                raise ReplayError(
                    f"{where}: name {name!r} is taken by the built-in family "
                    f"{builtin.family!r} (pattern {builtin.pattern}); give the plug-in another name"
                )
        for name in builtin.canonical:
            if _name_pattern(plugin.pattern).fullmatch(name):
                raise ReplayError(
                    f"{where}: pattern {plugin.pattern!r} matches the built-in name {name!r}; "
                    "give the plug-in a pattern of its own"
                )


def registered() -> list[StrategySpec]:
    """Every family: built-ins in `all` order, then loaded plug-ins."""
    _load_builtin()
    specs = list(_REGISTRY.values())
    # By module, not registration: a family module imported early (by a caller, a test)
    # registered first and moved itself to the front of `all` and of the docs table.
    order = {f"replay.strategies.{name}": n for n, name in enumerate(BUILTIN_FAMILIES)}
    builtins = sorted(
        (s for s in specs if not s.is_plugin),
        key=lambda s: order.get(getattr(s.build, "__module__", ""), len(order)),
    )
    return builtins + [s for s in specs if s.is_plugin]


_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def _number(value: str, kilo: int = 1000) -> int | float | None:
    """`40k`, `-5`, `0.3`, `40_000` → a number (an int when whole); None if not a number.

    Negative numbers are read too, so a range check can say what is wrong with them."""
    # ASCII digits only, as in names (`chars=٥` was read as 5).
    m = re.fullmatch(
        r"([-+]?\d+(?:\.\d+)?)([kKmM]?)", value.strip().replace("_", ""), re.ASCII
    )
    if not m:
        return None
    digits = m.group(1)
    scale = {"": 1, "k": kilo, "m": kilo * kilo}[m.group(2).lower()]
    if "." not in digits:
        return int(digits) * scale  # exact, however large
    number = float(digits) * scale
    return int(number) if number.is_integer() else number


def coerce_param(spec: StrategySpec, param: str, raw: Any) -> Any:
    """Read a parameter value from a name or `--set`, by the type of the parameter's default."""
    if not isinstance(raw, str):
        return raw
    default = spec.parameters().get(param)
    kilo = spec.kilo.get(param, 1000)
    text = raw.strip()
    where = f"{spec.family}.{param}={raw!r}"
    bounds = spec.bounds.get(param)
    if bounds is not None and text in bounds.words:
        return text  # a word the parameter accepts besides numbers (`keep=all`)
    if isinstance(default, bool):
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ReplayError(f"{where}: expected true or false")
    if isinstance(default, int):
        if bounds is PERCENT or f"(?P<{param}>\\d+)pct" in spec.pattern:  # (the name: `50pct`)
            number = re.fullmatch(r"\s*(\d+)\s*(%|pct)?\s*", text, re.ASCII)
            if number is None:
                raise ReplayError(f"{where}: expected a whole-number percent (like 50 or 50%)")
            return int(number.group(1))
        value = _number(text, kilo)
        if value is None or value != int(value):
            raise ReplayError(f"{where}: expected an integer (like 40000 or 40k)")
        return int(value)
    if isinstance(default, float):
        if text.endswith("%"):
            value = _number(text[:-1])
            if value is None:
                raise ReplayError(f"{where}: expected a number")
            return float(value) / 100
        value = _number(text, kilo)
        if value is None:
            raise ReplayError(f"{where}: expected a number")
        return float(value)
    if isinstance(default, tuple | list):
        return tuple(p.strip() for p in re.split(r"[+,]", text) if p.strip())
    if default is None or text.lower() == "none":
        if text.lower() == "none":
            return None
        if text.lower() in _TRUE | _FALSE and not text.isdigit():
            return text.lower() in _TRUE
        value = _number(text, kilo)
        return value if value is not None else text
    return text


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return "+".join(str(v) for v in value)
    return str(value)


def split_names(names: str) -> list[str]:
    """Split a comma-separated list of names, keeping commas inside `[...]` overrides."""
    parts, depth, current = [], 0, []
    for ch in names:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _bracket_overrides(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in split_names(text):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ReplayError(
                f"override {part!r}: expected param=value (a list inside brackets is written "
                "a+b: a comma starts the next parameter)"
            )
        key, value = key.strip(), value.strip()
        earlier = out.get(key)
        if earlier is not None and earlier != value:
            # Which one would win is no answer: as with a repeated --set.
            raise ReplayError(
                f"override {key!r} is given twice ({earlier!r} and {value!r}); give it once"
            )
        out[key] = value
    return out


def _apply(spec: StrategySpec, params: dict[str, Any], raw: Mapping[str, Any]) -> dict[str, str]:
    """Check and apply overrides; return the ones that changed a value (for the name)."""
    known = spec.parameters()
    changed: dict[str, str] = {}
    for key, value in raw.items():
        if key not in known and not spec.accepts_any():
            choices = ", ".join(sorted(known)) or "none"
            raise ReplayError(
                f"strategy family {spec.family!r} has no parameter {key!r} (parameters: {choices})"
            )
        coerced = coerce_param(spec, key, value)
        if params.get(key, known.get(key)) != coerced or key not in params:
            changed[key] = _format_value(coerced)
        params[key] = coerced
    return changed


NOT_SIMULATED = {
    "pi-branch-summary": "pi summarizes an abandoned branch when /tree navigates away from it, "
    "and replay logs carry no branch-navigation event to trigger it",
    "claudecode-microcompact-cache-edits": "Claude Code's cache_edits delete old results "
    "server-side with the cached prefix intact, which a view cannot express",
    "aider-repomap": "Aider's repository map is computed from the repository, which the log "
    "does not contain",
}
"""Strategies of the research that replay does not simulate, by family, with why: named in a
strategy list, they are refused with that reason rather than as unknown names."""


def parse_name(
    name: str, overrides: Mapping[str, Mapping[str, Any]] | None = None
) -> NamedStrategy:
    """Build the strategy a name describes, or raise with the list of known names.

    `overrides` maps a family to `{param: value}` (the CLI's `--set family.param=value`)."""
    _load_builtin()
    base, bracket = name.strip(), ""
    m = re.fullmatch(r"(.+?)\[(.*)\]", base)
    if m:
        base, bracket = m.group(1), m.group(2)
    for spec in registered():
        match = _name_pattern(spec.pattern).fullmatch(base)
        if match:
            params = dict(spec.parameters())
            for k, v in match.groupdict().items():
                if v is not None:
                    params[k] = _coerce_group(spec, k, v)
            named = dict(params)
            changed = _apply(spec, params, _bracket_overrides(bracket)) if bracket else {}
            changed.update(_apply(spec, params, (overrides or {}).get(spec.family, {})))
            _check_bounds(spec, params, name.strip())
            # As the strategy reads them: `[max_tokens=8.0k]` changes nothing in
            # `aider-summarize-8k`, and `threshold=50.0pct` runs as `50pct`.
            changed = {
                k: _format_value(params[k])
                for k in changed
                if k not in named or params[k] != _as_read(spec, k, named[k])
            }
            label = base
            if changed:
                label += "[" + ",".join(f"{k}={v}" for k, v in sorted(changed.items())) + "]"
            return NamedStrategy(name=label, spec=spec, params=params)
    family = next((f for f in NOT_SIMULATED if base == f or base.startswith(f + "-")), None)
    if family is not None:
        raise ReplayError(
            f"strategy {name!r} is not simulated: {NOT_SIMULATED[family]} (docs/strategies.md, "
            "\"Not simulated\")"
        )
    names = canonical_names() + plugin_names()
    # A typo among ~50 long names: the closest ones first, before the whole list.
    close = difflib.get_close_matches(base, names, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    raise ReplayError(
        f"unknown strategy {name!r}{hint}; known: {', '.join(names)} (see `replay strategies`)"
    )


def _as_read(spec: StrategySpec, key: str, value: Any) -> Any:
    """A name's own value as its bounds read it (`8k` → 8000), or as it is."""
    bounds = spec.bounds.get(key)
    if bounds is None or value is None:
        return value
    try:
        return bounds.check(value, spec.kilo.get(key, 1000))
    except ValueError:
        return value  # (overridden, or refused with the final value)


def _check_bounds(spec: StrategySpec, params: dict[str, Any], name: str) -> None:
    """Refuse any parameter outside its declared bounds, naming the strategy, the parameter
    and what it accepts (numbers given as words, like `8k` from a name, become numbers)."""
    defaults = spec.parameters()
    for key, bounds in spec.bounds.items():
        if key not in params or (params[key] is None and defaults.get(key) is None):
            continue  # an optional parameter left unset (`sliding-10` has no modifier)
        try:
            params[key] = bounds.check(params[key], spec.kilo.get(key, 1000))
        except ValueError:
            value = params[key]
            number = isinstance(value, int | float) or _number(str(value)) is not None
            problem = "is out of range" if number else "is not accepted"
            raise ReplayError(
                f"strategy {name!r}: {key}={_format_value(value)} {problem}; "
                f"{spec.family}.{key} must be {bounds.describe()}"
            ) from None


_NUMBER = re.compile(r"\\d\+(?!k\?)")
"""A number in a family's name pattern (the text `\\d+`), unless a `k` may already follow."""


@cache
def _name_pattern(pattern: str) -> re.Pattern[str]:
    """A family's name pattern, every number in it taking a `k` suffix (x1,000: `truncate-2k`,
    `compact-at-12k-structured`), and ASCII digits only (any script's digits would do
    otherwise: `truncate-٥٠٠` was another name for 500)."""
    return re.compile(_NUMBER.sub(lambda _: r"\d+k?", pattern), re.ASCII)


def _coerce_group(spec: StrategySpec, param: str, value: str) -> Any:
    if isinstance(spec.parameters().get(param), str):
        return value
    try:
        return coerce_param(spec, param, value)
    except ReplayError:
        return value  # a word where a number is the default (`keep-all`): the family decides


def canonical_names() -> list[str]:
    """The names `--strategies all` runs, in registry order (built-in families only)."""
    return [n for spec in registered() if not spec.is_plugin for n in spec.canonical]


def plugin_names() -> list[str]:
    """The names `--strategies plugins` runs: every loaded plug-in's canonical names."""
    return [
        n for spec in registered() if spec.is_plugin for n in (spec.canonical or (spec.family,))
    ]


def resolve(
    names: str | Sequence[str | NamedStrategy],
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[NamedStrategy]:
    """`all`, `plugins`, a comma-separated string, or a list of names (or built strategies) →
    built strategies, duplicates dropped, order kept. `overrides`: family → {param: value}."""
    _load_builtin()
    overrides = dict(overrides or {})
    specs = {s.family: s for s in registered()}
    for family, params in overrides.items():
        spec = specs.get(family)
        if spec is None:
            raise ReplayError(
                f"--set {family}.…: no strategy family {family!r} "
                f"(families: {', '.join(sorted(specs))})"
            )
        # Unknown parameters and bad values are errors even for a family no name runs.
        _apply(spec, dict(spec.parameters()), params)
    if isinstance(names, str):
        names = split_names(names)
    expanded: list[str | NamedStrategy] = []
    for n in names:
        if n == "all":
            expanded.extend(canonical_names())
        elif n == "plugins":
            expanded.extend(plugin_names())
        else:
            expanded.append(n)
    seen: dict[object, NamedStrategy] = {}
    for n in expanded:
        if isinstance(n, NamedStrategy):
            # One of a registered family runs what its name says; a one-off (a what-if, its own
            # spec) is told apart by its name.
            registered_family = _REGISTRY.get(n.spec.family) is n.spec
            seen.setdefault(_identity(n) if registered_family else n.name, n)
            continue
        built = parse_name(n, overrides)
        # Two names of one strategy (`truncate-1k`, `truncate-1000`) run once, as the first.
        seen.setdefault(_identity(built), built)
    if not seen:
        if "plugins" in names:
            raise ReplayError(
                "`plugins` names no strategy: no plug-in is loaded (load one with "
                "--strategy-file FILE in replay run, breakeven, report or plot, or install a "
                "package with a `replay.strategies` entry point)"
            )
        raise ReplayError("no strategy given; try --strategies all")
    return list(seen.values())


def _identity(built: NamedStrategy) -> tuple[str, str]:
    """What a parsed name runs: its family and every parameter's value."""
    params = {**built.spec.parameters(), **built.params}
    return built.spec.family, repr(sorted(params.items()))


def as_view(result: View | list[Item]) -> View:
    return result if isinstance(result, View) else View(items=list(result))


# Family modules, in the order `all` runs them (importing a module registers its family).
BUILTIN_FAMILIES = (
    # the log itself (what the agent really sent), then the seed study's five
    "recorded",
    "baseline",
    "truncate",
    "age_truncate",
    "compaction",
    "sliding",
    # the articles' other named strategies
    "compact_chain",
    "tool_aging",
    "append_supersede",
    "prune",
    "retrieval",
    # Codex CLI
    "codex_compact",
    "codex_remote_compact",
    "codex_drop_oldest",
    "codex_tool_trunc",
    # opencode
    "opencode_prune",
    "opencode_compact_v1",
    "opencode_compact_tail",
    "opencode_tool_trunc",
    # pi
    "pi_compact",
    # Claude Code (public analyses, UNVERIFIED)
    "claudecode_autocompact",
    "claudecode_microcompact",
    # provider-side mechanisms
    "anthropic_clear_tool_uses",
    "anthropic_clear_thinking",
    "anthropic_compact",
    "openai_responses_compact",
    # other harnesses
    "aider_summarize",
    "cline_truncate",
    "cline_dedup",
    "roo_truncate",
    "roo_condense",
    "gemini_compress",
    "gemini_mask",
    "goose_compact",
    "goose_tool_pairs",
    # OpenHands condensers and SWE-agent
    "observation_mask",
    "swe_last_n",
    "openhands_recent",
    "openhands_amortized",
    "openhands_llm_summary",
    "openhands_llm_attention",
    "openhands_window",
    "openhands_browser_mask",
    # OpenClaw
    "openclaw_prune",
)
_BUILTIN_MODULES = frozenset(f"replay.strategies.{name}" for name in BUILTIN_FAMILIES)
"""Where built-in families are defined: a spec built anywhere else is a plug-in."""

_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    try:
        for module in BUILTIN_FAMILIES:
            importlib.import_module(f"replay.strategies.{module}")
        from replay.strategies._plugins import load_entry_points

        load_entry_points()
    except BaseException:
        _loaded = False
        raise
