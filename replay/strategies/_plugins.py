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
- `NAME` — the strategy name (default: the file name, `_` → `-`);
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
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import re
import sys
import warnings
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from replay._errors import ReplayError
from replay.strategies._base import CACHE_CLASSES, Bounds, StrategySpec, register

GROUP = "replay.strategies"

_entry_points_loaded = False
_files: dict[Path, list[StrategySpec]] = {}


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
        spec.loader.exec_module(module)
    except Exception as err:  # the user's code: report it, never a traceback
        sys.modules.pop(name, None)
        raise ReplayError(f"--strategy-file {path}: {type(err).__name__}: {err}") from err
    return module


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
    name = str(getattr(module, "NAME", default_name))
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
    """Import a plug-in file and register its strategies (idempotent per path)."""
    from replay.strategies._base import _load_builtin

    _load_builtin()
    resolved = Path(path).expanduser().resolve()
    if resolved in _files:
        return _files[resolved]
    if not resolved.is_file():
        raise ReplayError(f"--strategy-file {path}: no such file")
    module = _import_file(resolved)
    specs = spec_from_module(module, f"file:{path}", resolved.stem.replace("_", "-"))
    registered_here: list[StrategySpec] = []
    try:
        for spec in specs:
            register(spec)
            registered_here.append(spec)
    except ReplayError:
        for spec in registered_here:  # all of the file or none of it
            _unregister(spec)
        raise
    _files[resolved] = specs
    return specs


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


def load_entry_points(force: bool = False) -> list[StrategySpec]:
    """Register the strategies of installed packages (entry-point group `replay.strategies`).
    A broken plug-in is skipped with a warning instead of breaking every command."""
    global _entry_points_loaded
    if _entry_points_loaded and not force:
        return []
    _entry_points_loaded = True
    loaded: list[StrategySpec] = []
    for ep in metadata.entry_points(group=GROUP):
        origin = f"entry-point:{ep.name}"
        try:
            specs = _specs_from_object(ep.load(), origin)
            for spec in specs:
                register(spec)
            loaded.extend(specs)
        except Exception as err:  # a third-party package: warn, keep going
            warnings.warn(
                f"strategy plug-in {ep.name!r} ({ep.value}) not loaded: {err}", stacklevel=2
            )
    return loaded


__all__ = ["GROUP", "load_entry_points", "load_strategy_file", "spec_from_module"]
