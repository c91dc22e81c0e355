"""Render a strategy's view into a provider request of token-counted blocks."""

from replay.render._render import Renderer, first_difference
from replay.render._request import BlockInfo, BlockTable, RenderedRequest

__all__ = ["BlockInfo", "BlockTable", "RenderedRequest", "Renderer", "first_difference"]
