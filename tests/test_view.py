"""The items a strategy reads and returns (`replay.strategies._view`): what each shows the model,
the edits that derive one item from another, and the shared-prefix search over two views."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.strategies._view import (
    AssistantItem,
    Block,
    SummaryItem,
    ToolResultItem,
    UserItem,
    cut_output,
    item_chars,
    replace_output,
    shared_prefix,
    tool_call_block,
    truncate_chars,
)


def test_only_thinking_logged_by_its_size_alone_is_billed_by_its_size() -> None:
    """`size_only`: the size of thinking the log holds only by its size; None for a block whose
    text is logged (its text is counted instead), and for any other kind of block."""
    assert Block("thinking", estimated_tokens=9).size_only == 9
    assert Block("thinking", text="I should read the file.", estimated_tokens=9).size_only is None
    assert Block("text", estimated_tokens=9).size_only is None


def test_a_tool_call_is_shown_as_its_name_and_arguments_in_the_provider_s_form() -> None:
    """`Block.arguments_format`: `json` sorts the keys (the default), `compact` keeps the model's
    key order without spaces, `raw` shows a freeform tool's `input` string as written; text
    that is not ASCII is shown as itself, not escaped."""
    arguments = {"path": "src/é.py", "limit": [1, 2]}
    def shown(form: str, args: object = arguments) -> str:
        return Block("tool_call", name="f", arguments=args, arguments_format=form).rendered()

    assert shown("json") == 'f({"limit": [1, 2], "path": "src/é.py"})'
    assert shown("compact") == 'f({"path":"src/é.py","limit":[1,2]})'
    patch = "*** Begin Patch\n*** Delete File: a.py\n*** End Patch"
    assert shown("raw", {"input": patch}) == f"f({patch})"
    # `raw` needs an `input` string: any other arguments are shown as JSON.
    assert shown("raw", {"input": {"a": 1}}) == 'f({"input": {"a": 1}})'
    assert shown("raw", ["a.py"]) == 'f(["a.py"])'  # not a dict at all


def test_a_logged_call_keeps_only_the_argument_forms_a_view_knows() -> None:
    """`tool_call_block` keeps a log block's `compact` or `raw` form; anything else is `json`."""
    def form(logged: object) -> str:
        call = SimpleNamespace(id="c1", name="f", arguments={}, arguments_format=logged)
        return tool_call_block(call).arguments_format

    assert [form(f) for f in ("compact", "raw", "json", None, "yaml")] == [
        "compact", "raw", "json", "json", "json"]
    no_form = tool_call_block(SimpleNamespace(id="c2", name="g", arguments={"a": 1}))
    assert (no_form.call_id, no_form.name, no_form.arguments, no_form.arguments_format) == (
        "c2", "g", {"a": 1}, "json")


def test_characters_an_item_shows_the_model() -> None:
    """`item_chars` (the unit of rules in characters) counts what each item shows: a message's
    text, a result's output, an answer's blocks (no separator); `text_length` is the length of
    `shown_text`, whose blocks are one per line."""
    answer = AssistantItem((Block("text", text="Reading."),
                            Block("tool_call", name="ls", arguments={})))
    assert answer.shown_text() == "Reading.\nls({})"
    assert item_chars(answer) == len("Reading.") + len("ls({})")
    assert answer.text_length() == len(answer.shown_text())
    assert AssistantItem(()).text_length() == 0
    assert item_chars(UserItem("hello")) == 5
    assert item_chars(SummaryItem("a summary")) == 9
    assert item_chars(ToolResultItem("c1", "ls", "a.py\nb.py")) == 9
    # a shortened result shows its new output, not the one it replaced
    assert item_chars(replace_output(ToolResultItem("c1", "ls", "x" * 40), "[cleared]")) == 9


def test_an_answer_s_tool_calls_are_its_tool_call_blocks_alone() -> None:
    """`tool_calls`: an answer's calls in order, without its text or thinking blocks."""
    first = Block("tool_call", call_id="c1", name="ls", arguments={})
    second = Block("tool_call", call_id="c2", name="cat", arguments={"path": "a.py"})
    answer = AssistantItem((Block("thinking", text="List first."), first,
                            Block("text", text="Then read."), second))
    assert answer.tool_calls == (first, second)
    assert AssistantItem((Block("text", text="Done."),)).tool_calls == ()


def test_a_replaced_output_is_the_same_result_showing_another_text() -> None:
    """`replace_output`: the same text gives the item itself (an untouched item is the same
    object, the module docstring); another gives a result of the same call, error flag, event
    and arguments, whose `original_chars` stays the full output's length after a second edit;
    the same edit twice gives the same object."""
    item = ToolResultItem("c1", "bash", "x" * 40, is_error=True, event_index=6,
                          arguments={"command": "ls"})
    assert replace_output(item, item.output) is item
    stub = replace_output(item, "[cleared]")
    assert (stub.call_id, stub.tool_name, stub.output, stub.is_error, stub.event_index,
            stub.arguments, stub.original_chars) == (
        "c1", "bash", "[cleared]", True, 6, {"command": "ls"}, 40)
    assert replace_output(item, "[cleared]") is stub
    assert replace_output(item, "".join(["[clea", "red]"])) is stub  # an equal text, not the same
    assert replace_output(item, "[other]").output == "[other]"  # not the edit remembered
    third = replace_output(item, "[third]")  # edits past the second are remembered too
    assert replace_output(item, "[third]") is third
    assert replace_output(stub, "[gone]").original_chars == 40
    empty = replace_output(ToolResultItem("c2", "bash", ""), "[cleared]")
    assert replace_output(empty, "[gone]").original_chars == 0  # an empty output stays 0 long
    assert item.original_chars is None  # the history's item is never changed


def test_a_cut_output_ends_with_the_marker_asked_for() -> None:
    """`cut_output`/`truncate_chars`: a marker given is the cut's end, an empty one too; the
    same cut with another marker is another item."""
    assert cut_output("abcdef", 3, "") == "abc"
    assert cut_output("abcdef", 3, "…") == "abc…"
    assert cut_output("abcdef", 6, "…") is None
    item = ToolResultItem("c1", "read", "abcdef")
    first, second = truncate_chars(item, 3, "[A]"), truncate_chars(item, 3, "[B]")
    assert (first.output, second.output) == ("abc[A]", "abc[B]")
    assert truncate_chars(item, 3, "[A]") is first


_POOL = [UserItem(f"m{n}") for n in range(4)]


@st.composite
def _views(draw: st.DrawFn) -> tuple[list, list]:
    """Two views: a shared head of the same objects (long enough to reach the search's
    galloping and halving, past 64 and 128 items), then tails that may differ anywhere."""
    head = draw(st.lists(st.sampled_from(_POOL), max_size=400))
    old_tail = draw(st.lists(st.sampled_from(_POOL), max_size=80))
    new_tail = draw(st.lists(st.sampled_from(_POOL), max_size=80))
    return head + old_tail, head + new_tail


@settings(max_examples=300, deadline=None)
@given(_views())
def test_shared_prefix_is_the_count_of_leading_identical_items(views) -> None:
    """`shared_prefix` equals the naive walk (leading items that are the very same objects),
    and leaves both lists as they were."""
    old, new = views
    before_old, before_new = list(old), list(new)
    naive = 0
    while naive < min(len(old), len(new)) and old[naive] is new[naive]:
        naive += 1
    assert shared_prefix(old, new) == naive
    assert old == before_old and new == before_new
    assert shared_prefix(old, old) == len(old)


def test_shared_prefix_finds_a_difference_anywhere_in_a_long_view() -> None:
    """Every position of a 300-item view, and both ends, as the first difference."""
    base = [UserItem(str(n)) for n in range(300)]
    for at in range(len(base)):
        changed = [*base[:at], UserItem("new"), *base[at + 1:]]
        assert shared_prefix(base, changed) == at
        assert shared_prefix(base, base[:at]) == at  # a shorter view: all of it shared


def test_an_empty_output_stubbed_stays_0_long_when_cut_and_is_shown_stubbed() -> None:
    """`original_chars` 0 is a length (an empty output a strategy stubbed), not "unknown": the
    summarizer's cut transcript keeps it, and the report flags the item as stubbed."""
    from replay.report._html import _FLAG_STUBBED, _describe, _Interner
    from replay.strategies.compaction import _cut

    stub = replace_output(ToolResultItem("c2", "bash", ""), "[cleared] " * 20)
    assert stub.original_chars == 0
    assert _cut(stub, 20, 0).original_chars == 0
    assert _cut(ToolResultItem("c3", "bash", "y" * 200), 20, 0).original_chars == 200
    _, described = _describe(stub, _Interner())
    assert described[-1] & _FLAG_STUBBED
    _, untouched = _describe(ToolResultItem("c4", "bash", ""), _Interner())
    assert not untouched[-1] & _FLAG_STUBBED
