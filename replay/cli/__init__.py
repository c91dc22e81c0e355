"""Command-line interface (`replay`)."""

from replay.cli._main import cli, main

__all__ = ["cli", "main"]
