"""`claudecode-autocompact`'s re-attached files: the most recently read, written or edited."""

from __future__ import annotations

from replay.strategies._view import ToolResultItem
from replay.strategies.claudecode_autocompact import recent_files


def _result(tool: str, arguments: dict, output: str = "ok", *, error: bool = False
            ) -> ToolResultItem:
    return ToolResultItem(call_id=f"c{id(arguments)}", tool_name=tool, output=output,
                          is_error=error, arguments=arguments)


def test_an_edit_applies_to_the_content_read_and_makes_the_file_most_recent() -> None:
    items = [
        _result("Read", {"file_path": "a.py"}, "x = 1\ny = 2\n"),
        _result("Read", {"file_path": "b.py"}, "print('b')\n"),
        _result("Edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"}),
    ]
    assert recent_files(items) == [("a.py", "x = 1\ny = 3\n"), ("b.py", "print('b')\n")]


def test_edits_of_every_agent_and_multiedit() -> None:
    read = _result("read", {"filePath": "a.ts"}, "a a a")
    opencode = _result("edit", {"filePath": "a.ts", "oldString": "a", "newString": "b",
                                "replaceAll": True})
    assert recent_files([read, opencode]) == [("a.ts", "b b b")]
    pi = _result("edit", {"path": "a.ts", "oldText": "a", "newText": "c"})
    assert recent_files([read, pi]) == [("a.ts", "c a a")]
    emptied = _result("Edit", {"file_path": "a.ts", "old_string": "a a a", "new_string": ""})
    assert recent_files([read, emptied]) == [("a.ts", "")]
    multi = _result("MultiEdit", {"file_path": "a.ts", "edits": [
        {"old_string": "a a", "new_string": "z"}, {"old_string": "z", "new_string": "y"}]})
    assert recent_files([read, multi]) == [("a.ts", "y a")]


def test_an_edit_that_cannot_be_applied_keeps_the_content_last_seen() -> None:
    # Only part of the file was read: the old string is elsewhere. The file was still edited
    # last (Claude Code re-attaches it from disk, which the log does not hold).
    items = [
        _result("Read", {"file_path": "a.py", "offset": 10, "limit": 2}, "x = 1\n"),
        _result("Read", {"file_path": "b.py"}, "b\n"),
        _result("Edit", {"file_path": "a.py", "old_string": "z = 0", "new_string": "z = 1"}),
    ]
    assert recent_files(items) == [("a.py", "x = 1\n"), ("b.py", "b\n")]


def test_a_failed_call_changes_nothing_and_a_write_replaces_the_content() -> None:
    items = [
        _result("Read", {"file_path": "a.py"}, "x = 1\n"),
        _result("Read", {"file_path": "b.py"}, "b\n"),
        _result("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, error=True),
        _result("Write", {"file_path": "b.py", "content": "b = 2\n"}, error=True),
    ]
    assert recent_files(items) == [("b.py", "b\n"), ("a.py", "x = 1\n")]
    items.append(_result("Write", {"file_path": "a.py", "content": "new\n"}))
    assert recent_files(items)[0] == ("a.py", "new\n")


def test_a_file_of_exactly_the_per_file_budget_is_re_attached() -> None:
    """Each file is re-attached while it holds at most `file_tokens` (5,000) tokens: 5,000
    fits, 5,001 leaves only a note to read it again."""
    import math
    from datetime import UTC, datetime

    from replay.strategies._base import StrategyContext
    from replay.strategies.claudecode_autocompact import restored_files

    ctx = StrategyContext(request_index=0, ts=datetime(2026, 3, 1, tzinfo=UTC), model="claude",
                          context_window=200_000, count_tokens=lambda s: math.ceil(len(s) / 4))
    items = [
        _result("Read", {"file_path": "fits.py"}, "f" * 20_000),  # 5,000 tokens
        _result("Read", {"file_path": "over.py"}, "o" * 20_001),  # 5,001 tokens
    ]
    over, fits = (i.text for i in restored_files(items, ctx, 5, 5000, 50_000))
    assert fits.startswith("Called the Read tool") and fits.endswith("f" * 20_000)
    assert over.startswith("The file over.py was read before compaction (too large")

