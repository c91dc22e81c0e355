"""Strategy plug-ins: a Python file (`--strategy-file my.py`) or an installed package.

A plug-in strategy has the same signature as a built-in one:

    def strategy(history: Sequence[Item], ctx: StrategyContext) -> View | list[Item]

`history` is the thread's full, lossless history (items from `replay.strategies`); return the
items to send (history items untouched where nothing changed, new ones made with
`replace_output`, `dataclasses.replace`, `SummaryItem` …), or a `View` when you also want to
declare summarizer calls (costed as separate requests) or rewrite events.

**A file** may define, at module level:

- `strategy` — the function above, or a class whose instances are called that way (a fresh
  instance per replayed thread, so it may keep state); extra keyword parameters of the function
  or of the class's `__init__` are the strategy's parameters (`--set NAME.param=value`);
- `NAME` — the strategy name: letters, digits, dashes, underscores (default: the file name,
  `_` → `-`);
- `CACHE_CLASS` — `append-only`, `freeze-once`, `churn` or `churn-tail` (default `churn`: the
  safe assumption for an unknown strategy);
- `RULE`, `SOURCE` — one-line rule and source (defaults: the module docstring's first line and
  the file path);
- `PARAMS` — default values for the parameters;
- `BOUNDS` — the values a parameter accepts, e.g. `{"n": Bounds(low=1)}` (`Bounds` from
  `replay.strategies`); a value outside them is refused before anything runs.

or it may instead define any number of `StrategySpec` objects (families with name patterns),
which are registered as they are.

**A package** exposes entry points in the group `replay.strategies`; each entry point loads a
`StrategySpec`, a list of them, a module holding them, or a zero-argument factory returning one
or a list. In `pyproject.toml`:

    [project.entry-points."replay.strategies"]
    my-strategies = "my_package.strategies:SPECS"

Plug-ins are listed by `replay strategies` (origin `file:…` / `entry-point:…`) and run when
named, or all at once with `--strategies plugins` (`--strategies all,plugins` for built-ins
and plug-ins together). A plug-in may not reuse the family, a name or the pattern of a built-in
(it would never run: built-ins are matched first).

What a plug-in raises, or returns that is not a view, is a `ReplayError` naming the plug-in (its
file and line where known): a mistake in the user's code, not a crash of replay.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import inspect
import re
import sys
import sysconfig
import traceback
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from types import FunctionType, ModuleType
from typing import TYPE_CHECKING, Any

from replay._errors import PluginWarning, ReplayError
from replay.strategies._base import CACHE_CLASSES, Bounds, StrategySpec, register
from replay.strategies._view import (
    AssistantItem,
    Block,
    RewriteEvent,
    SummarizerCall,
    SummaryItem,
    ToolResultItem,
    UserItem,
    View,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from replay.strategies._base import NamedStrategy, StrategyContext

GROUP = "replay.strategies"

_entry_points_loaded = False
_files: dict[Path, list[StrategySpec]] = {}
_given: dict[Path, str | Path] = {}
"""Each loaded file's path as it was given (its strategies' `origin` quotes it)."""
_digests: dict[Path, str | None] = {}
"""Each loaded file's content digest when it was loaded (`load_strategy_file` reloads an
edited file)."""


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.blake2b(str(path).encode(), digest_size=6).hexdigest()
    stem = re.sub(r"\W", "_", path.stem)
    name = f"replay_plugin_{stem}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ReplayError(f"--strategy-file {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        # Compiled from the file's bytes, not through the loader: its bytecode cache wrote a
        # `__pycache__` beside the user's file (an input), and took an edit of the same size
        # within the same second for the old code (the cache is keyed by mtime and size).
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        with _stdout_to_stderr():
            exec(code, module.__dict__)
    except (Exception, SystemExit) as err:  # the user's code: report it, never a traceback
        sys.modules.pop(name, None)
        where = _raised_at(err, str(path)) or str(path)
        raise ReplayError(f"--strategy-file {where}: {_described(err)}") from err
    return module


def _stdout_to_stderr() -> contextlib.AbstractContextManager[Any]:
    """While a plug-in's code runs: what it prints (a debugging `print`) goes to standard error,
    as replay's notes do, so standard output stays the result (`--format json | jq`)."""
    return contextlib.redirect_stdout(sys.stderr)


_OWN = Path(__file__).resolve().parents[1]
"""replay's own package: frames in it are not the plug-in's."""
_ITEMS = (UserItem, AssistantItem, ToolResultItem, SummaryItem)
_EXPECTED = (
    "expected a View or a list of history items (UserItem, AssistantItem, ToolResultItem, "
    "SummaryItem)"
)


def _described(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _raised_at(err: BaseException, file: str | None = None) -> str | None:
    """`path:line` of the innermost frame of `err` in the plug-in's file: `file`, else the file
    of the first frame outside replay (where replay's code called the plug-in's)."""
    frames = traceback.extract_tb(err.__traceback__)
    if file is None:
        file = next((f.filename for f in frames if not Path(f.filename).is_relative_to(_OWN)), None)
    inside = [f for f in frames if f.filename == file]
    return f"{inside[-1].filename}:{inside[-1].lineno}" if inside else None


def _defined_at(target: Any) -> str:
    """`path:line` where a plug-in's function or class is defined (its file if no line)."""
    code = getattr(target, "__code__", None)
    if code is not None:
        return f"{code.co_filename}:{code.co_firstlineno}"
    try:
        lines = inspect.getsourcelines(target)[1]
        return f"{inspect.getsourcefile(target)}:{lines}"
    except (OSError, TypeError):
        return str(getattr(inspect.getmodule(target), "__file__", None) or target)


def _check_signature(target: Any, origin: str) -> None:
    """A module's `strategy` must be callable as (history, ctx) — a function, or a class whose
    instances are — so a wrong one is refused when the file is loaded, not mid-replay."""
    label, skip, expected = "`strategy`", 0, "(history, ctx)"
    if inspect.isclass(target):
        call = next((vars(c)["__call__"] for c in target.__mro__[:-1] if "__call__" in vars(c)),
                    None)
        if call is None:
            raise ReplayError(
                f"{_defined_at(target)}: class {target.__name__} defines no __call__: its "
                f"instances cannot be called as a strategy with (history, ctx){_of(origin)}"
            )
        if not isinstance(call, FunctionType):
            return  # a descriptor or a builtin: nothing to check before it runs
        label, skip, expected = f"`{target.__name__}.__call__`", 1, "(self, history, ctx)"
        target = call
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return
    try:
        signature.bind_partial(*([None] * (skip + 2)))
    except TypeError:
        raise ReplayError(
            f"{_defined_at(target)}: {label} takes {signature}; expected {expected} and keyword "
            f"parameters{_of(origin)}"
        ) from None


def _of(origin: str) -> str:
    """` (entry-point:NAME)` after a message that names a file and line; nothing for a plug-in
    file, whose path the message already gives."""
    return "" if origin.startswith("file:") else f" ({origin})"


class _Guarded:
    """A plug-in's strategy: what it raises, and a result that is not a view, are reported as a
    `ReplayError` naming the plug-in (a mistake in the user's code, not a crash of replay)."""

    __slots__ = ("named", "strategy")

    def __init__(self, strategy: Any, named: NamedStrategy) -> None:
        self.strategy = strategy
        self.named = named

    def __getattr__(self, name: str) -> Any:  # the plug-in's own state stays visible
        if name in _Guarded.__slots__:  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.strategy, name)

    def __call__(self, history: Sequence[Any], ctx: StrategyContext) -> Any:
        try:
            # A copy: the engine's own list is the thread's history, kept from request to
            # request; a plug-in that popped or sorted it in place changed every later request.
            with _stdout_to_stderr():
                result = self.strategy(list(history), ctx)
        except (Exception, SystemExit) as err:  # `sys.exit()` too: it would end replay silently
            if _names(err, self.named):  # a guarded plug-in it ran: named already
                raise
            raise _plugin_error(self.named, err, f"on request {ctx.request_index}") from err
        wrong = _not_a_view(result, history)
        if wrong:
            origin = self.named.spec.origin
            raise ReplayError(
                f"{_called_at(self.strategy)}: plug-in strategy {self.named.name!r} returned "
                f"{wrong[0]} on request {ctx.request_index}: {wrong[1]}{_of(origin)}"
            )
        return result


def _called_at(strategy: Any) -> str:
    """`path:line` of the function replay called: the strategy itself, or its class's
    `__call__`."""
    if isinstance(strategy, FunctionType):
        return _defined_at(strategy)
    call = inspect.getattr_static(type(strategy), "__call__", None)
    return _defined_at(call if isinstance(call, FunctionType) else strategy)


def _not_a_view(result: Any, history: Sequence[Any]) -> tuple[str, str] | None:
    """What is wrong with a strategy's result and what was expected, or None for a view or a
    list of items. Items of `history` are sound; a new one (a derived item, a summary, a
    summarizer call's input) is checked field by field, as a wrong one would crash the
    renderer."""
    if isinstance(result, View):
        items, outer = result.items, "a View"
        if not isinstance(items, list | tuple):
            return f"a View of {type(items).__name__}", _EXPECTED
    elif isinstance(result, list | tuple):
        items, outer = result, f"a {type(result).__name__}"
    else:
        return "None" if result is None else type(result).__name__, _EXPECTED
    if not items:  # a request sends at least one message
        return f"{outer} holding no item", _EXPECTED
    known = {id(item) for item in history}
    wrong = _not_items(items, known)
    if wrong:
        return f"{outer} holding {wrong}", _EXPECTED
    if isinstance(result, View):
        return _not_calls(result.summarizer_calls, known) or _not_events(result.events)
    return None


def _not_items(items: Any, known: set[int]) -> str | None:
    """The first item of `items` that is no sound history item, described."""
    for item in items:
        if id(item) in known:
            continue
        if not isinstance(item, _ITEMS):
            return type(item).__name__
        wrong = _bad_fields(item)
        if wrong:
            return f"an {type(item).__name__} whose {wrong}" if isinstance(
                item, AssistantItem) else f"a {type(item).__name__} whose {wrong}"
    return None


def _bad_fields(item: Any) -> str | None:
    """The field of a new item whose value the renderer cannot use, described."""
    texts = {"text": item.text} if isinstance(item, UserItem | SummaryItem) else {}
    if isinstance(item, ToolResultItem):
        texts = {"output": item.output, "call_id": item.call_id, "tool_name": item.tool_name}
    for name, value in texts.items():
        if not isinstance(value, str):
            return f"{name} is {type(value).__name__} (expected str)"
    if isinstance(item, UserItem) and not _a_size(item.estimated_tokens):
        return f"estimated_tokens is {item.estimated_tokens!r} (expected None or tokens ≥ 0)"
    if isinstance(item, SummaryItem) and item.role not in ("user", "assistant"):
        return f"role is {item.role!r} (expected 'user' or 'assistant')"
    if isinstance(item, AssistantItem):
        if not isinstance(item.blocks, tuple | list):
            return f"blocks are {type(item.blocks).__name__} (expected a tuple of Block)"
        for block in item.blocks:
            wrong = _bad_block(block)
            if wrong:
                return f"blocks hold {wrong}"
    return None


def _bad_block(block: Any) -> str | None:
    """What is wrong with an assistant block the renderer would get, or None."""
    if not isinstance(block, Block):
        return f"{type(block).__name__} (expected Block)"
    if block.type not in ("text", "thinking", "tool_call") or not isinstance(block.text, str):
        return f"Block(type={block.type!r}, text={type(block.text).__name__})"
    if not _a_size(block.estimated_tokens):
        return f"a Block whose estimated_tokens is {block.estimated_tokens!r}"
    if block.type == "tool_call":
        try:
            block.rendered()  # its arguments as the model sees them (JSON), kept on the block
        except (TypeError, ValueError) as err:
            return f"a tool call whose arguments cannot be shown as JSON ({err})"
    return None


def _a_size(tokens: Any) -> bool:
    """Whether `tokens` is an estimated size a renderer can add: None, or a count ≥ 0."""
    return tokens is None or (type(tokens) is int and tokens >= 0)


_CALLS = (
    "expected a list of SummarizerCall (from replay.strategies) with str instruction and summary"
)


def _not_calls(calls: Any, known: set[int]) -> tuple[str, str] | None:
    """What is wrong with a View's summarizer calls, or None."""
    if not isinstance(calls, list | tuple):
        return f"a View whose summarizer_calls are {type(calls).__name__}", _CALLS
    for call in calls:
        if not isinstance(call, SummarizerCall):
            return f"a View whose summarizer_calls hold {type(call).__name__}", _CALLS
        for name in ("instruction", "summary"):
            value = getattr(call, name)
            if not isinstance(value, str):
                return f"a SummarizerCall whose {name} is {type(value).__name__}", _CALLS
        if not isinstance(call.input_items, list | tuple):
            return (f"a SummarizerCall whose input_items are {type(call.input_items).__name__}",
                    _EXPECTED)
        wrong = _not_items(call.input_items, known)
        if wrong:
            return f"a SummarizerCall whose input_items hold {wrong}", _EXPECTED
    return None


def _not_events(events: Any) -> tuple[str, str] | None:
    """What is wrong with a View's rewrite events, or None."""
    expected = "expected a list of RewriteEvent (from replay.strategies)"
    if not isinstance(events, list | tuple):
        return f"a View whose events are {type(events).__name__}", expected
    bad = next((e for e in events if not isinstance(e, RewriteEvent)), None)
    return None if bad is None else (f"a View whose events hold {type(bad).__name__}", expected)


def _names(err: BaseException, named: NamedStrategy) -> bool:
    """Whether `err` is replay's error already saying it is `named`'s (raised by its guard,
    further in)."""
    return isinstance(err, ReplayError) and f"plug-in strategy {named.name!r}" in str(err)


def _plugin_error(named: NamedStrategy, err: BaseException, when: str) -> ReplayError:
    where = _raised_at(err) or named.spec.origin
    return ReplayError(
        f"{where}: plug-in strategy {named.name!r} raised {_described(err)} {when}"
        f"{_of(named.spec.origin) if where != named.spec.origin else ''}"
    )


def build_guarded(named: NamedStrategy) -> Any:
    """Build a plug-in's strategy for one thread, guarded (`_Guarded`)."""
    try:
        with _stdout_to_stderr():
            strategy = named.spec.build(**named.params)
    except (Exception, SystemExit) as err:
        if _names(err, named):
            raise
        raise _plugin_error(named, err, "when it was built") from err
    if not callable(strategy):
        raise ReplayError(
            f"{named.spec.origin}: plug-in strategy {named.name!r} was built as "
            f"{type(strategy).__name__}: expected a callable taking (history, ctx)"
        )
    return _Guarded(strategy, named)


def _params_of(target: Any) -> dict[str, Any]:
    """Keyword parameters a plug-in function (beyond history, ctx) or class __init__ takes."""
    func = target.__init__ if inspect.isclass(target) else target
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return {}
    params = {}
    skip = 1 if inspect.isclass(target) else 2  # self / (history, ctx)
    for p in list(signature.parameters.values())[skip:]:
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            params[p.name] = None if p.default is p.empty else p.default
    return params


def spec_from_module(module: ModuleType, origin: str, default_name: str) -> list[StrategySpec]:
    """The strategies a plug-in module defines (its StrategySpec objects, or `strategy`)."""
    specs = [v for v in vars(module).values() if isinstance(v, StrategySpec)]
    for value in vars(module).values():
        if (
            isinstance(value, list | tuple)
            and value
            and all(isinstance(v, StrategySpec) for v in value)
        ):
            specs.extend(v for v in value if v not in specs)
    if specs:
        return [_with_origin(s, origin) for s in specs]
    target = getattr(module, "strategy", None) or getattr(module, "Strategy", None)
    if target is None or not callable(target):
        raise ReplayError(
            f"{origin}: defines neither `strategy` (a function or class) nor StrategySpec objects"
        )
    _check_signature(target, origin)
    name = getattr(module, "NAME", default_name)
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        # What `--strategies a,b` and `--set NAME.param=…` take apart, and every result row.
        what = f"NAME {name!r}" if hasattr(module, "NAME") else (
            f"the file's name {name!r} (the default NAME)"
        )
        raise ReplayError(
            f"{origin}: {what} must be a strategy name: a string of letters, digits, "
            "dashes and underscores (e.g. 'keep-edges'); set NAME"
        )
    cache_class = getattr(module, "CACHE_CLASS", "churn")
    if cache_class not in CACHE_CLASSES:
        raise ReplayError(
            f"{origin}: CACHE_CLASS {cache_class!r} is not one of {', '.join(CACHE_CLASSES)}"
        )
    doc = (module.__doc__ or "").strip().splitlines()
    params = {**_params_of(target), **dict(getattr(module, "PARAMS", {}) or {})}
    bounds = dict(getattr(module, "BOUNDS", {}) or {})
    for key, value in bounds.items():
        if key not in params or not isinstance(value, Bounds):
            raise ReplayError(
                f"{origin}: BOUNDS[{key!r}] must be a Bounds for one of the parameters "
                f"({', '.join(params) or 'none'})"
            )

    if inspect.isclass(target):

        def build(**kwargs: Any) -> Any:
            return target(**kwargs)
    else:

        def build(**kwargs: Any) -> Any:
            if not kwargs:
                return target

            def call(history: Any, ctx: Any) -> Any:
                return target(history, ctx, **kwargs)

            return call

    spec = StrategySpec(
        family=name,
        pattern=re.escape(name),
        build=_accepting(build, params),
        cache_class=cache_class,
        rule=str(getattr(module, "RULE", doc[0] if doc else "plug-in strategy")),
        defaults=params,
        canonical=(name,),
        source=str(getattr(module, "SOURCE", origin)),
        origin=origin,
        bounds=bounds,
    )
    return [spec]


def _accepting(build: Any, params: dict[str, Any]) -> Any:
    """`build` with an explicit signature, so the registry knows the parameter names."""

    def wrapper(**kwargs: Any) -> Any:
        return build(**kwargs)

    wrapper.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=v) for k, v in params.items()]
    )
    return wrapper


def _with_origin(spec: StrategySpec, origin: str) -> StrategySpec:
    from dataclasses import replace

    return spec if spec.is_plugin else replace(spec, origin=origin)


def load_strategy_file(path: str | Path) -> list[StrategySpec]:
    """Import a plug-in file and register its strategies. Loading a file again is a no-op
    while it is unchanged; once edited (a notebook's plug-in being worked on), its new code
    replaces the old, which kept running before."""
    from replay.strategies._base import _load_builtin

    _load_builtin()
    resolved = Path(path).expanduser().resolve()
    previous = _files.get(resolved)
    if previous is not None and _digests.get(resolved) == _content_digest(resolved):
        return previous
    if not resolved.is_file():
        why = (
            "is a folder, not a file" if resolved.is_dir()
            else "not a regular file (a Python file is needed)" if resolved.exists()
            else "no such file"
        )
        raise ReplayError(f"--strategy-file {path}: {why}")
    digest = _content_digest(resolved)
    module = _import_file(resolved)
    origin = f"file:{path}"
    try:
        specs = spec_from_module(module, origin, resolved.stem.replace("_", "-"))
    except ReplayError as err:  # named as the option that loads it, like its other errors
        text = str(err)
        if text.startswith(f"{origin}: "):
            raise ReplayError(f"--strategy-file {path}: {text[len(origin) + 2:]}") from None
        raise
    for spec in previous or ():  # the file's older code gives way to the new
        _unregister(spec)
    registered_here: list[StrategySpec] = []
    try:
        for spec in specs:
            register(spec)
            registered_here.append(spec)
    except ReplayError:
        for spec in registered_here:  # all of the file or none of it
            _unregister(spec)
        for spec in previous or ():  # (the version that was loaded stays)
            register(spec)
        raise
    _files[resolved] = specs
    _given[resolved] = path
    _digests[resolved] = digest
    return specs


def _content_digest(path: Path) -> str | None:
    """SHA-256 of a plug-in file's bytes (None if it cannot be read)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def pickled_for_workers(strategies: Any, what: str, instead: str) -> bytes:
    """`strategies` (a strategy or specs the calling program made) pickled for worker
    processes, whose build functions go by reference: one nothing else can import (made inside
    a function) is refused here, before any work, as `what`'s error with the options `instead`."""
    import pickle

    try:
        return pickle.dumps(strategies, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as err:
        raise ReplayError(
            f"{what} cannot be sent to a worker process ({type(err).__name__}: {err}): define "
            f"its build function at the top level of a module, {instead}"
        ) from None


def unpickled_in_worker(payload: bytes, what: str, instead: str) -> Any:
    """What `pickled_for_workers` sent, in a worker process: a build function the worker's
    copy of its module lacks (defined under a script's main guard) is `what`'s error, not a
    worker that dies with a traceback."""
    import pickle

    try:
        return pickle.loads(payload)
    except Exception as err:  # (AttributeError, ImportError…: whatever the import raised)
        raise ReplayError(
            f"{what} cannot be loaded in a worker process ({type(err).__name__}: {err}): define "
            "its build function at the top level of a module the workers import (in a script, "
            f"outside `if __name__ == \"__main__\":`), {instead}"
        ) from None


def loaded_files() -> list[str | Path]:
    """The plug-in files loaded so far, in order, as they were given: a worker process
    (`--workers`) loads the same ones to run their strategies under the same origins."""
    return [_given.get(resolved, resolved) for resolved in _files]


def _unregister(spec: StrategySpec) -> None:
    from replay.strategies._base import _REGISTRY

    if _REGISTRY.get(spec.family) is spec:
        del _REGISTRY[spec.family]


def _specs_from_object(obj: Any, origin: str) -> list[StrategySpec]:
    if isinstance(obj, StrategySpec):
        return [_with_origin(obj, origin)]
    if isinstance(obj, ModuleType):
        return spec_from_module(obj, origin, obj.__name__.rsplit(".", 1)[-1])
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        out: list[StrategySpec] = []
        for o in obj:
            out.extend(_specs_from_object(o, origin))
        return out
    if callable(obj):
        return _specs_from_object(obj(), origin)
    raise ReplayError(f"{origin}: loads a {type(obj).__name__}, not a StrategySpec")


def _package_line(err: BaseException) -> str | None:
    """`path:line` of the innermost frame of `err` in the plug-in package's code: neither
    replay's nor the standard library's (which loads entry points), nor a frozen module's."""
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    frames = [
        f for f in traceback.extract_tb(err.__traceback__)
        if not f.filename.startswith("<")
        and not Path(f.filename).resolve().is_relative_to(_OWN)
        and not Path(f.filename).resolve().is_relative_to(stdlib)
    ]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else None


def load_entry_points(force: bool = False) -> list[StrategySpec]:
    """Register the strategies of installed packages (entry-point group `replay.strategies`).
    A broken plug-in is skipped with a warning instead of breaking every command: none of its
    strategies is registered."""
    global _entry_points_loaded
    if _entry_points_loaded and not force:
        return []
    _entry_points_loaded = True
    loaded: list[StrategySpec] = []
    for ep in metadata.entry_points(group=GROUP):
        origin = f"entry-point:{ep.name}"
        registered_here: list[StrategySpec] = []
        try:
            with _stdout_to_stderr():
                specs = _specs_from_object(ep.load(), origin)
            for spec in specs:
                registered_here.append(register(spec))
            loaded.extend(registered_here)
        except (Exception, SystemExit) as err:  # a third-party package: warn, keep going
            for spec in registered_here:  # "not loaded": none of its specs stays registered
                _unregister(spec)
            where = _package_line(err)
            warnings.warn(
                f"strategy plug-in {ep.name!r} ({ep.value}) not loaded: "
                f"{where + ': ' if where else ''}{_described(err)}",
                PluginWarning,
                stacklevel=2,
            )
    return loaded


__all__ = [
    "GROUP",
    "load_entry_points",
    "load_strategy_file",
    "loaded_files",
    "spec_from_module",
]
