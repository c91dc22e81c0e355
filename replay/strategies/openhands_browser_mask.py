"""`openhands-browser-mask-1`: OpenHands' browser-output condenser.

Rule: on every request, every browser observation except the `keep` newest shows only
"Visited URL {url}\nContent omitted". Each new page visited masks the previous one, so the
prefix is rewritten wherever the last browser output sits.

Defaults: keep = 1 (the app's pipeline uses 2). Browser tools are recognised by name
(browse / browser / navigate …); the URL comes from the call's `url` argument. Cache class:
churn.

Source: All-Hands-AI/OpenHands openhands/memory/condenser/impl/browser_output_condenser.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from replay._words import counted
from replay.strategies._base import AT_LEAST_1, StrategyContext, StrategySpec, register
from replay.strategies._common import AgingView, tool_kind
from replay.strategies._prompts import LITERAL_OPENHANDS_BROWSER
from replay.strategies._view import Item, RewriteEvent, ToolResultItem, View, replace_output


def url_of(arguments: object) -> str:
    if isinstance(arguments, dict):
        for key in ("url", "href", "page", "target"):
            if isinstance(arguments.get(key), str):
                return arguments[key]
    return "(unknown)"


def openhands_browser_mask(keep: int = 1) -> object:
    view = AgingView(
        lambda item: isinstance(item, ToolResultItem) and tool_kind(item.tool_name) == "browser"
    )

    def mask_old_pages(history: Sequence[Item], ctx: StrategyContext) -> View:
        newly, _ = view.sync(history, keep)
        for n in newly:
            item = history[n]
            text = LITERAL_OPENHANDS_BROWSER.format(url=url_of(item.arguments))  # type: ignore[union-attr]
            view.set(n, replace_output(item, text))  # type: ignore[arg-type]
        # Named where the view changed (a page newly masked), not again at every request.
        events = [RewriteEvent(
            "clear", f"{counted(len(newly), 'browser output')} masked"
        )] if newly else []
        return View(items=view.items(), events=events)

    return mask_old_pages


register(
    StrategySpec(
        family="openhands-browser-mask",
        pattern=r"openhands-browser-mask-(?P<keep>\d+)",
        build=openhands_browser_mask,
        cache_class="churn",
        rule="browser observations except the newest N → 'Visited URL … Content omitted'",
        defaults={"keep": 1},
        bounds={"keep": AT_LEAST_1},
        canonical=("openhands-browser-mask-1",),
        source="All-Hands-AI/OpenHands browser_output_condenser.py",
    )
)
