"""Evidence loss (issue 6): recorded actions that relied on text a strategy's view hid.

The sample run reproduces the seed study's finding without a model; small hand-made logs and
views check each kind of flag where the answer is known; the recommendation only picks
strategies with no flag."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal
from functools import partial
from unittest import mock

import gen
import polars as pl
import pytest
from conftest import RUN42
from gen import Call, Turn, build_session
from hypothesis import given, settings
from hypothesis import strategies as st

import replay
from replay._api import recommendation, recommendation_line
from replay._errors import ReplayError
from replay.evidence import (
    HIDDEN_MENTION,
    BlindAction,
    EvidenceChecker,
    _blind,
    forget_shared_answers,
    share_answers_for,
)
from replay.strategies import AssistantItem, Block, SummaryItem, ToolResultItem, UserItem
from replay.strategies._common import item_text, path_of, reads_part_of_file
from replay.strategies._view import truncate_chars

BUGGY = "markComplete(request.payload.id)"


# --- the sample run -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run42_doc(invoke):
    result = invoke("run", RUN42, "-s",
                    "baseline,truncate-500,age-truncate-500-keep-3,compact-at-12000-structured",
                    "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout, parse_float=Decimal)


def test_run42_summary_flags_only_truncate_500(run42_doc) -> None:
    blind = {row["strategy"]: row["blind_actions"] for row in run42_doc["summary"]}
    assert blind["truncate-500"] > 0
    assert blind["baseline"] == 0
    assert blind["age-truncate-500-keep-3"] == 0
    assert blind["compact-at-12000-structured"] == 0
    # The agent's text named what the cut reads hid (then read the file again): mentions,
    # counted apart, and a note names them.
    mentions = {row["strategy"]: row["blind_mentions"] for row in run42_doc["summary"]}
    assert mentions == {
        "baseline": 0,
        "truncate-500": 3,
        "age-truncate-500-keep-3": 2,
        "compact-at-12000-structured": 1,
    }
    assert any("`blind_mentions`" in n and "truncate-500 3" in n for n in run42_doc["notes"])
    # Every flag, with what it relied on.
    # (the fix's `stubbed-read` row is a detail of its edit, not a second action)
    rows = run42_doc["evidence"]
    assert blind["truncate-500"] == 1
    assert len(rows) == sum(blind.values()) + sum(mentions.values()) + 1
    assert [(r["strategy"], r["request_index"], r["kind"], r["tool"], r["path"])
            for r in rows if r["strategy"] == "truncate-500"] == [
        ("truncate-500", 7, HIDDEN_MENTION, None, None),
        ("truncate-500", 8, HIDDEN_MENTION, None, None),
        ("truncate-500", 9, HIDDEN_MENTION, None, None),
        ("truncate-500", 10, "hidden-edit-target", "write_file", "src/api.js"),
        ("truncate-500", 10, "stubbed-read", "write_file", "src/api.js"),
    ]
    assert BUGGY in rows[3]["excerpt"]


def test_run42_truncate_500_hid_the_line_the_fix_changes() -> None:
    result = replay.replay(RUN42, ["baseline", "truncate-500"])
    actions = [a for r in result.records if r.strategy == "truncate-500" for a in r.blind_actions]
    targets = [a for a in actions if a.kind == "hidden-edit-target"]
    assert targets, actions
    fix = targets[0]
    assert fix.path == "src/api.js"
    assert BUGGY in fix.excerpt
    assert fix.tool == "write_file"
    # The write rewrote a file shown only as a cut-down read: a re-read the replay does not bill.
    assert ("stubbed-read", "src/api.js") in {(a.kind, a.path) for a in actions}
    # Per request: the turn row carries the count.
    turns = result.turns.filter(pl.col("strategy") == "truncate-500")
    per_request = dict(zip(turns["request_index"], turns["blind_actions"], strict=True))
    assert per_request[fix.request_index] == 1  # one write, whatever its rows
    mentioned = dict(zip(turns["request_index"], turns["blind_mentions"], strict=True))
    details = sum(a.kind == "stubbed-read" for a in actions)
    assert sum(per_request.values()) + sum(mentioned.values()) + details == len(actions)
    # Before the fix, the agent named what the 500-character reads had cut, in its own words.
    assert [(a.request_index, a.tool, a.excerpt) for a in actions if a.kind == HIDDEN_MENTION] == [
        (7, "", "markComplete"), (8, "", "task.id"), (9, "", "request.payload.id")
    ]
    assert {i for i, n in mentioned.items() if n} == {7, 8, 9}
    assert not any(r.blind_actions for r in result.records if r.strategy == "baseline")


# --- the checker on hand-made views ---------------------------------------------------------

LINES = [f"def helper_{i}(x):\n    return x + {i}" for i in range(30)]
CALC = "\n".join(LINES) + "\n\ndef price_with_tax(price, qty):\n    return price * qty + tax_rate\n"
TARGET = "    return price * qty + tax_rate"


def _call(call_id: str, name: str, **arguments) -> Block:
    return Block("tool_call", call_id=call_id, name=name, arguments=arguments)


def _history(output: str = CALC, path: str = "src/calc.py"):
    return [
        UserItem("The tax is wrong.", event_index=0),
        AssistantItem((_call("c1", "read_file", path=path),), event_index=1),
        ToolResultItem("c1", "read_file", output, event_index=2, arguments={"path": path}),
    ]


def _check(history, view, *calls: Block) -> list[BlindAction]:
    response = AssistantItem(tuple(calls)) if calls else AssistantItem((Block("text", "ok"),))
    return EvidenceChecker().check(history, view, response, 3, "req-4")


def _check_cut_read(*calls: Block) -> list[BlindAction]:
    """`calls` checked against `_history()` whose read the view shows cut to 500 characters
    (`TARGET`, near the file's end, is hidden)."""
    history = _history()
    return _check(history, [*history[:2], truncate_chars(history[2], 500)], *calls)


EDIT = _call("c2", "edit_file", path="src/calc.py", old_string=TARGET,
             new_string="    return price * qty * (1 + tax_rate)")


def test_edit_whose_old_string_was_cut_is_flagged() -> None:
    actions = _check_cut_read(EDIT)
    assert [(a.kind, a.tool, a.path) for a in actions] == [
        ("hidden-edit-target", "edit_file", "src/calc.py"),
        ("stubbed-read", "edit_file", "src/calc.py"),
    ]
    assert actions[0].excerpt == TARGET.strip()
    assert (actions[0].request_index, actions[0].request_id) == (3, "req-4")
    assert actions[1].excerpt.startswith("def helper_0(x):")


def test_edit_whose_read_was_dropped_is_flagged_without_a_stub() -> None:
    history = _history()
    actions = _check(history, history[:1], EDIT)
    assert [a.kind for a in actions] == ["hidden-edit-target"]


def test_what_one_log_taught_about_its_agents_messages_does_not_answer_for_another() -> None:
    """Where a line is among the agent's own messages is shared between replays (every
    strategy asks the same), per chain of messages: two logs whose first message is the same
    and whose second differs must each get their own answer."""
    forget_shared_answers()
    first = _history()[:2]  # the same user message and first assistant message (a read)

    def replay_of(second: str) -> list[BlindAction]:
        read = ToolResultItem("c1", "read_file", CALC, event_index=2,
                              arguments={"path": "src/calc.py"})
        history = [*first, read, AssistantItem((Block("text", second),), event_index=3)]
        view = [*first, truncate_chars(read, 5), history[3]]  # the agent's messages kept whole
        expected = _reference_check(history, view, AssistantItem((EDIT,)), 3, "req-4")
        assert _check(history, view, EDIT) == expected
        return expected

    assert replay_of(f"The line is `{TARGET.strip()}`.") == []  # its own message shows it
    assert replay_of("The line is in the read.")  # hidden: only the cut read had it


@pytest.mark.parametrize("said", [
    f"The bug is here: x{TARGET.strip()}.",  # the line's first token inside a longer one
    f"The bug is `{TARGET.strip()}_total`.",  # its last
])
def test_the_agents_message_holding_a_line_inside_longer_tokens_shows_it(said: str) -> None:
    """The agent's messages are read only where their tokens may hold the line asked about
    (`_Signatures`): every token of the line but its first and last is one of theirs, those
    two may lie inside longer ones."""
    forget_shared_answers()
    history = [*_history(), AssistantItem((Block("text", said),), event_index=3)]
    view = [*history[:2], truncate_chars(history[2], 5), history[3]]
    assert _check(history, view, EDIT) == []  # the message shows the line
    assert [a.kind for a in _check(history, view[:3], EDIT)] == [
        "hidden-edit-target", "stubbed-read"
    ]  # without the message, the line is hidden


def test_shared_answers_serve_one_session_at_a_time() -> None:
    """A batch replays log after log: what checkers share about one log is dropped when
    another log's replay begins, and kept between the replays of one log's strategies."""
    one, other = object(), object()
    share_answers_for(one)
    history = _history()
    view = [*history[:2], truncate_chars(history[2], 5)]
    assert _check(history, view, EDIT)  # hidden: the line was asked about, the answers shared
    assert _blind._HOLDS and _blind._IN_ASSISTANTS
    share_answers_for(one)  # another strategy of the same log
    assert _blind._HOLDS and _blind._IN_ASSISTANTS
    share_answers_for(other)
    assert not _blind._HOLDS and not _blind._IN_ASSISTANTS and not _blind._CHAINS


def test_edit_of_a_visible_line_is_not_flagged() -> None:
    visible_edit = _call("c2", "edit_file", path="src/calc.py",
                         old_string="def helper_1(x):\n    return x + 1", new_string="")
    assert _check_cut_read(visible_edit) == []


def test_edit_of_text_never_seen_is_not_evidence_loss() -> None:
    """The agent quoted text the log never showed it: nothing was hidden by the strategy."""
    history = _history()
    view = history[:1]
    guess = _call("c2", "edit_file", path="src/calc.py", old_string="return subtotal * 1.2",
                  new_string="")
    assert _check(history, view, guess) == []


def _rewritten(old: str, line_no: int, new_line: str) -> str:
    lines = old.splitlines()
    lines[line_no] = new_line
    return "\n".join(lines) + "\n"


def test_whole_file_write_whose_changed_lines_were_cut_is_flagged() -> None:
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return price * qty * 1.2")
    write = _call("c2", "write_file", path="src/calc.py", content=new)
    actions = _check_cut_read(write)
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    # The changed line and its neighbours (one line of context each side, as they were).
    assert actions[0].excerpt.splitlines() == [
        "def price_with_tax(price, qty):",
        TARGET.strip(),
    ]


def test_whole_file_write_of_visible_lines_is_not_flagged() -> None:
    new = _rewritten(CALC, 1, "    return x + 100")
    write = _call("c2", "write_file", path="src/calc.py", content=new)
    assert _check_cut_read(write) == []


def test_whole_file_write_is_compared_with_the_last_whole_read_not_a_range() -> None:
    """A read of some lines is not the file's content: diffed against it, a whole-file write
    would look as if it changed only around the range, and a change elsewhere would pass."""
    history = _history()
    lines = CALC.splitlines(keepends=True)
    ranged = _call("c5", "read_file", path="src/calc.py", offset=2, limit=3)
    history += [
        AssistantItem((ranged,), event_index=5),
        ToolResultItem("c5", "read_file", "".join(lines[1:4]), event_index=6,
                       arguments=ranged.arguments),
    ]
    view = [*history[:2], truncate_chars(history[2], 500), *history[3:]]
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return price * qty * 1.2")
    actions = _check(history, view, _call("c7", "write_file", path="src/calc.py", content=new))
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert TARGET.strip() in actions[0].excerpt.splitlines()


@pytest.mark.parametrize("tool", ["write_file", "create_file"])
def test_whole_file_write_against_an_earlier_write(tool: str) -> None:
    """The last known content of a file can be the agent's own earlier write, by any write
    tool: one that creates the file (`create` in its name) as well."""
    history = [
        UserItem("Write the module.", event_index=0),
        AssistantItem((_call("c1", tool, path="src/calc.py", content=CALC),), event_index=1),
        ToolResultItem("c1", tool, "Wrote 1,130 bytes", event_index=2),
    ]
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return 0")
    write = _call("c2", "write_file", path="src/calc.py", content=new)
    assert [a.kind for a in _check(history, [history[0]], write)] == ["hidden-edit-target"]
    assert _check(history, list(history), write) == []


def test_quote_only_in_a_hidden_result_is_flagged() -> None:
    history = [
        UserItem("Login fails.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "not ok 1\n  raised InvalidTokenSignature in auth",
                       event_index=2),
    ]
    grep = _call("c2", "grep", pattern="InvalidTokenSignature", path="src")
    actions = _check(history, history[:2], grep)
    assert [(a.kind, a.tool, a.path, a.excerpt) for a in actions] == [
        ("hidden-quote", "grep", "src", "InvalidTokenSignature")
    ]
    assert _check(history, list(history), grep) == []


def test_text_the_system_prompt_shows_is_never_hidden() -> None:
    """A strategy cuts a listing that names a path the system prompt names too: the agent
    that reads that path saw it on every request, through the prompt no strategy edits."""
    listing = "\n".join(f"src/module_{n}.py" for n in range(60)) + "\nconfig/settings_prod.yaml"
    turns = [
        Turn("Listing.", [Call("list_files", {"path": "."}, listing)]),
        Turn("Reading.", [Call("read_file", {"path": "config/settings_prod.yaml"}, "debug: no")]),
        Turn("Done."),
    ]
    told = build_session(turns, system="The settings live in config/settings_prod.yaml.")
    hidden = build_session(turns, system="You are a coding agent.")
    flagged = {
        name: [
            (a.kind, a.excerpt)
            for r in replay.replay(s, "truncate-500").records for a in r.blind_actions
        ]
        for name, s in (("told", told), ("hidden", hidden))
    }
    assert flagged["hidden"] == [("hidden-quote", "config/settings_prod.yaml")]
    assert flagged["told"] == []


def _in_dir(session, cwd: str):
    return dataclasses.replace(session, header=session.header.model_copy(update={"cwd": cwd}))


def test_an_absolute_path_under_the_working_directory_is_shown_by_its_relative_form() -> None:
    """Claude Code, Codex and pi agents name files by absolute path; the harness tells them
    the working directory. A view that shows `src/billing_rules.py` shows what the agent made
    absolute: `/work/app/src/billing_rules.py` was flagged all the same (28 such rows on the
    opencode sample, among them reads of files a kept listing named)."""
    path = "/work/app/src/billing_rules.py"
    history = [
        UserItem("Fix the billing rules.", event_index=0),
        AssistantItem((_call("c1", "grep", pattern="RATE"),), event_index=1),
        ToolResultItem("c1", "grep", f"{path}:3:RATE = 2", event_index=2),
        AssistantItem((_call("c2", "list_files", path="src"),), event_index=3),
        ToolResultItem("c2", "list_files", "src/billing_rules.py\nsrc/app.py", event_index=4),
    ]
    read = _call("c3", "read_file", path=path)

    def flags(view, cwd):
        found = EvidenceChecker().check(history, view, AssistantItem((read,)), 5, "r", cwd=cwd)
        return [(a.kind, a.excerpt) for a in found]

    without_grep = [history[0], *history[3:]]
    assert flags(without_grep, "/work/app") == []
    assert flags(without_grep, "/work/app/") == []
    assert flags(without_grep, "") == [("hidden-quote", path)]  # no directory known
    assert flags(without_grep, "/work") == [("hidden-quote", path)]  # `app/src/…` is not shown
    # The relative form hidden as well: the path is hidden.
    assert flags(history[:2], "/work/app") == [("hidden-quote", path)]


def test_the_working_directory_is_always_shown() -> None:
    """Every harness tells the model its working directory: a command run there names text
    the request always holds, whatever a strategy cut (`cd <cwd>` was a hidden quote when a
    cut output had printed it; 75 rows on the samples)."""
    cwd = "/Users/someone/projects/tasklist"
    turns = [
        Turn("Where?", [Call("bash", {"command": "ls -a; pwd"}, "." * 600 + "\n" + cwd)]),
        Turn("Tests.", [Call("bash", {"command": f"cd {cwd} && npm test"}, "ok")]),
        Turn("Done."),
    ]
    session = build_session(turns)
    quotes = {
        name: [a.excerpt for r in replay.replay(s, "truncate-500").records for a in r.blind_actions]
        for name, s in (("told", _in_dir(session, cwd)), ("unknown", session))
    }
    assert quotes == {"told": [], "unknown": [cwd]}


def test_plain_words_and_flags_of_a_command_are_no_quote() -> None:
    """A command's plain words and flags recur in any text (`commit`, `--oneline`, `printf`,
    `beyond`): only pieces that name something exact count, as in prose. A third of the
    quote rows on the real samples were such words."""
    history = [
        UserItem("Summarize.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "see the commit beyond printf --oneline", event_index=2),
    ]
    command = _call("c2", "bash", command="git log --oneline | printf beyond commit")
    assert _check(history, history[:2], command) == []


def test_a_flag_with_a_capital_inside_is_no_quote() -> None:
    """`--noEmit` has a capital after a small letter, as a name does, but it is a flag: it was
    the commonest hidden quote on the samples (38 rows), with `--skipLibCheck`."""
    history = [
        UserItem("Typecheck.", event_index=0),
        AssistantItem((_call("c1", "bash", command="cat README"),), event_index=1),
        ToolResultItem("c1", "bash", "run npx tsc --noEmit --skipLibCheck", event_index=2),
    ]
    command = _call("c2", "bash", command="npx tsc --noEmit --skipLibCheck")
    said = AssistantItem((Block("text", "Running tsc with --noEmit."), command))
    assert EvidenceChecker().check(history, history[:2], said, 3, "req-4") == []


def test_a_device_of_the_system_is_no_quote() -> None:
    """`2>/dev/null` names no file the log told the agent of: it was the commonest hidden
    quote on the samples (103 rows). A path that only looks like one still counts."""
    history = [
        UserItem("Clean up.", event_index=0),
        AssistantItem((_call("c1", "bash", command="ls"),), event_index=1),
        ToolResultItem("c1", "bash", "ran: rm -f x 2>/dev/null; see src/dev/null_io.c",
                       event_index=2),
    ]
    command = _call("c2", "bash", command="cat src/dev/null_io.c 2>/dev/null")
    found = EvidenceChecker().check(history, history[:2], AssistantItem((command,)), 3, "r")
    assert [(a.kind, a.excerpt) for a in found] == [("hidden-quote", "src/dev/null_io.c")]


def test_the_vocabulary_of_a_harness_s_unlogged_tools_is_shown_at_every_request() -> None:
    """Claude Code logs hold no tool definition, yet every request sends TodoWrite's schema,
    whose `status` takes `in_progress` (pricing/known_names.json): a TodoWrite call setting it
    relied on that schema, not on a cut output that printed the word (88 hidden quotes of
    TodoWrite and Codex's update_plan on the samples). A path only the cut output printed is
    still hidden, whatever the harness."""
    board = "\n".join(f"task {n}: pending" for n in range(80)) + (
        "\ntask 81: in_progress (see src/todo_store.py)")
    todo = {"todos": [{"content": "Fix it", "status": "in_progress", "activeForm": "Fixing"}]}
    turns = [
        Turn("Board.", [Call("Bash", {"command": "cat board.txt"}, board)]),
        Turn("Plan.", [Call("TodoWrite", todo, "Todos updated"),
                       Call("Read", {"file_path": "src/todo_store.py"}, "x = 1")]),
        Turn("Done."),
    ]

    def quotes(agent: str) -> list[tuple[str, str]]:
        session = build_session(turns, provider="anthropic", agent=agent)
        return [(a.tool, a.excerpt) for r in replay.replay(session, "truncate-500").records
                for a in r.blind_actions]

    assert quotes("claude-code") == [("Read", "src/todo_store.py")]
    assert quotes("test-harness") == [("TodoWrite", "in_progress"),
                                      ("Read", "src/todo_store.py")]


def _quoted(output: str, *calls: Block, said: str = "") -> list[str]:
    """The excerpts flagged when a response quotes what only a cut result printed."""
    history = [
        UserItem("Go on.", event_index=0),
        AssistantItem((_call("c1", "bash", command="ls"),), event_index=1),
        ToolResultItem("c1", "bash", output, event_index=2),
    ]
    blocks = ((Block("text", said),) if said else ()) + calls
    found = EvidenceChecker().check(history, history[:2], AssistantItem(blocks), 3, "r")
    return [a.excerpt for a in found]


@pytest.mark.parametrize("name", ["GitHub", "TypeScript", "console.log", "JSON.parse",
                                  "package.json", "README.md", "node_modules", "AGENTS.md"])
def test_a_name_known_in_every_project_is_no_evidence(name: str) -> None:
    """A product's name, a language's built-in or a file a convention names is the same in
    every project: a model has it from training, so naming it proves nothing about a cut
    output that printed it too (GitHub 63 rows, console.log 67, in the samples)."""
    output = f"Pushed to {name} via console.log; see {name}"
    assert _quoted(output, _call("c2", "bash", command=f"grep -rn {name} ."),
                   said=f"Checking {name} now.") == []


@pytest.mark.parametrize(("known", "told"), [
    ("README.md", "docs/README.md"),  # a path with a directory names this project's file
    ("package.json", "packages/tui/package.json"),
    ("GitHub", "GitHubSyncService"),  # a project's own identifier holding a known name
    ("console.log", "console.logTiming"),
    ("//github.com", "//github.com/acme/widgets"),  # a site vs a page a text told
    ("//example.com", "//api.staging.example.com"),  # a site vs a host of this deployment
    ("example.com", "deploy/example.com"),  # a file named like a site, in a directory
])
def test_a_path_or_identifier_holding_a_known_name_is_still_evidence(known: str, told: str):
    output = f"found {told} (see {known})"
    call = _call("c2", "bash", command=f"cat {told} {known}")
    assert _quoted(output, call) == [told]
    assert _quoted(output, said=f"Reading {told}, not {known}.") == [told]


def test_a_bare_site_is_known_and_a_file_named_like_one_is_not() -> None:
    """`https://github.com` leaves `//github.com` as a piece: a site, known from training. A
    name with a file's suffix is not a site (`.py`, `.ts`, `.js` are not top-level domains
    the rule takes), nor a dotted member (`session.compact`)."""
    assert _blind.general_knowledge("//github.com")
    assert _blind.general_knowledge("example.org")
    for name in ("config.py", "theme.ts", "session.compact", "us.auth.example.io",
                 "//github.com/acme"):
        assert not _blind.general_knowledge(name), name


def test_a_quoted_phrase_is_checked_whole() -> None:
    # `grep "Preview theme"`: neither word names anything, the phrase does.
    history = [
        UserItem("Where is it?", event_index=0),
        AssistantItem((_call("c1", "read_file", path="a.ts"),), event_index=1),
        ToolResultItem("c1", "read_file", "// Preview theme switch\nexport {}", event_index=2,
                       arguments={"path": "a.ts"}),
    ]
    grep = _call("c2", "bash", command='grep -n "Preview theme" a.ts')
    assert [(a.kind, a.excerpt) for a in _check(history, history[:2], grep)] == [
        ("hidden-quote", "Preview theme")
    ]
    assert _check(history, list(history), grep) == []


@pytest.mark.parametrize(("phrase", "flagged"), [("Save draft", True), ("Save now", False)])
def test_a_quoted_phrase_of_ten_characters_counts_a_shorter_one_does_not(phrase, flagged):
    """The threshold is 10 characters, inclusive (a mutation to `> 10` passed every test)."""
    history = [
        UserItem("Where is it?", event_index=0),
        AssistantItem((_call("c1", "read_file", path="a.ts"),), event_index=1),
        ToolResultItem("c1", "read_file", f"// {phrase} button\nexport {{}}", event_index=2,
                       arguments={"path": "a.ts"}),
    ]
    grep = _call("c2", "bash", command=f'grep -n "{phrase}" a.ts')
    found = [(a.kind, a.excerpt) for a in _check(history, history[:2], grep)]
    assert found == ([("hidden-quote", phrase)] if flagged else [])


PATCH = f"""*** Begin Patch
*** Update File: src/calc.py
@@ def price_with_tax(price, qty):
-{TARGET}
+    return price * qty * (1 + tax_rate)
*** End Patch"""


@pytest.mark.parametrize(
    "call",
    [
        _call("c2", "apply_patch", input=PATCH),  # Codex
        _call("c2", "apply_patch", patchText=PATCH),  # opencode
        _call("c2", "MultiEdit", file_path="src/calc.py",  # Claude Code
              edits=[{"old_string": TARGET, "new_string": "x"}]),
        _call("c2", "edit", filePath="src/calc.py", oldString=TARGET, newString="x"),
        _call("c2", "edit", path="src/calc.py", oldText=TARGET, newText="x"),  # pi
        _call("c2", "edit_file", path="src/calc.py", old_text=TARGET, new_text="x"),
        _call("c2", "replace_in_file", path="src/calc.py", search=TARGET, replace="x"),
        _call("c2", "apply_patch", patch=PATCH),
    ],
    ids=["codex-patch", "opencode-patch", "multiedit", "oldString", "oldText", "old_text",
         "search", "patch-key"],
)
def test_every_edit_form_is_checked(call: Block) -> None:
    # None of these named its old text where the checker looked: they were never flagged.
    actions = _check_cut_read(call)
    assert [(a.kind, a.path) for a in actions] == [
        ("hidden-edit-target", "src/calc.py"),
        ("stubbed-read", "src/calc.py"),
    ]
    assert actions[0].excerpt == TARGET.strip()


EDITOR = "str_replace_based_edit_tool"


def _viewed(text: str, path: str) -> tuple[list, str]:
    """A history whose one read is an editor `view` of `path` (its lines numbered as `cat -n`
    does, under a header), and that view's output."""
    numbered = "".join(f"{n:6}\t{line}\n" for n, line in enumerate(text.splitlines(), 1))
    shown = f"Here's the result of running `cat -n` on {path}:\n{numbered}"
    return [
        UserItem("Fix it.", event_index=0),
        AssistantItem((_call("c1", EDITOR, command="view", path=path),), event_index=1),
        ToolResultItem("c1", EDITOR, shown, event_index=2,
                       arguments={"command": "view", "path": path}),
    ], shown


def test_an_editor_tool_s_view_is_a_read() -> None:
    """Anthropic's text editor (and `str_replace_editor`): `view` shows a file, though the
    tool's name is a write's. Its read was never recorded, so an edit of text only the hidden
    view showed was not flagged."""
    history, shown = _viewed(CALC, "src/calc.py")
    editor = EDITOR
    edit = _call("c2", editor, command="str_replace", path="src/calc.py", old_str=TARGET,
                 new_str="    return price * qty * (1 + tax_rate)")
    assert [(a.kind, a.path) for a in _check(history, history[:1], edit)] == [
        ("hidden-edit-target", "src/calc.py")
    ]
    assert _check(history, history, edit) == []
    assert _blind._viewed_text(shown) == CALC


def test_a_whole_file_write_is_diffed_against_an_editor_view_without_its_numbers() -> None:
    """An editor's `view` numbers its lines as `cat -n` does (`     16\t…`) under a header:
    against those, every line of a `create` changed, and the lines around the change were the
    whole file."""
    editor = EDITOR
    lines = [f"line {i} of the module" for i in range(1, 41)]
    history, _ = _viewed("\n".join(lines) + "\n", "m.py")
    new = "\n".join(lines[:19] + ["line 20, changed"] + lines[20:]) + "\n"
    write = _call("c2", editor, command="create", path="m.py", file_text=new)
    (edit, *_) = _check(history, history[:2], write)
    assert edit.kind == "hidden-edit-target"
    around = edit.excerpt.splitlines()
    assert around[-3:] == ["line 19 of the module", "line 20 of the module",
                           "line 21 of the module"]
    assert "line 10 of the module" not in around
    # The header above the numbered lines is no line of the file: writing the file back as
    # it was is no edit of hidden text.
    same = _call("c3", editor, command="create", path="m.py", file_text="\n".join(lines) + "\n")
    assert _check(history, history[:2], same) == []


def test_a_result_of_a_tool_named_both_a_read_and_a_write_is_not_the_file_s_content() -> None:
    """`edit_and_view` reads like a read and a write: its result (here a confirmation) is not
    taken for the file's content, which stays the earlier read's."""
    history = _history()
    tool = _call("c3", "edit_and_view", path="src/calc.py", command="append")
    history += [
        AssistantItem((tool,), event_index=3),
        ToolResultItem("c3", "edit_and_view", "Done: src/calc.py edited.", event_index=4,
                       arguments=tool.arguments),
    ]
    view = [*history[:2], truncate_chars(history[2], 500), *history[3:]]
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return price * qty * 1.2")
    write = _call("c5", "write_file", path="src/calc.py", content=new)
    actions = _check(history, view, write)
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert TARGET.strip() in actions[0].excerpt.splitlines()


def test_a_tool_named_like_a_write_that_edits_no_file_is_quote_checked() -> None:
    # `TodoWrite`, `write_stdin`: their names matched the write tools, so their arguments were
    # never checked at all.
    history = [
        UserItem("Go.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "raised InvalidTokenSignature", event_index=2),
    ]
    todo = _call("c2", "TodoWrite", todos=[{"content": "fix InvalidTokenSignature"}])
    assert [a.kind for a in _check(history, history[:2], todo)] == ["hidden-quote"]


def test_a_line_the_agent_wrote_is_shown_in_its_call_even_where_json_escapes_it() -> None:
    """A line with a quote or a backslash is escaped in the call's rendered JSON: the agent's
    own earlier write still shows it (46 of 251 edit rows on pi large-session were such)."""
    content = 'theme = {\n  "thinkingOff": "dimGray",\n}\n'
    history = [
        UserItem("Set the theme.", event_index=0),
        AssistantItem((_call("c1", "write", path="dark.json", content=content),), event_index=1),
        ToolResultItem("c1", "write", "ok", event_index=2),
        AssistantItem((_call("c3", "read_file", path="dark.json"),), event_index=3),
        ToolResultItem("c3", "read_file", content, event_index=4, arguments={"path": "dark.json"}),
    ]
    edit = _call("c2", "edit", path="dark.json", oldText='"thinkingOff": "dimGray",',
                 newText='"thinkingOff": "gray",')
    view = [*history[:4], truncate_chars(history[4], 5)]  # the read cut, the write shown
    assert _check(history, view, edit) == []


def test_a_whole_file_write_is_diffed_against_the_file_not_its_numbered_read() -> None:
    """Claude Code numbers a read's lines (`    16→…`) and appends a reminder: against those,
    every line of a whole-file write changed, and the lines "around the change" were the
    whole file."""
    lines = [f"line {i} of the module" for i in range(1, 41)]
    numbered = "".join(f"{n:6}→{t}\n" for n, t in enumerate(lines, 1))
    numbered += "\n<system-reminder>\nWhenever you read a file…\n</system-reminder>\n"
    history = [
        UserItem("Change line 20.", event_index=0),
        AssistantItem((_call("c1", "Read", file_path="m.py"),), event_index=1),
        ToolResultItem("c1", "Read", numbered, event_index=2, arguments={"file_path": "m.py"}),
    ]
    new = "\n".join(lines[:19] + ["line 20, changed"] + lines[20:]) + "\n"
    write = _call("c2", "Write", file_path="m.py", content=new)
    (edit, *_) = _check(history, history[:2], write)
    assert edit.kind == "hidden-edit-target"
    assert edit.excerpt.splitlines() == [  # the changed line, one line around it
        "line 19 of the module", "line 20 of the module", "line 21 of the module"
    ]


@pytest.mark.parametrize("number", ["{n}\t", "{n:6}\t"])
def test_a_whole_file_write_is_diffed_against_a_read_numbered_with_tabs(number: str) -> None:
    """Claude Code 2.1 numbers a read's lines `16<tab>…`: a write that changed line 2 only, in
    the 500 characters a cut read kept, was flagged with the lines past the cut."""
    lines = [f"const value_{i} = compute({i});" for i in range(40)]
    numbered = "".join(number.format(n=n) + t + "\n" for n, t in enumerate(lines, 1))
    history = [
        UserItem("Change value_1.", event_index=0),
        AssistantItem((_call("c1", "Read", file_path="a.js"),), event_index=1),
        ToolResultItem("c1", "Read", numbered, event_index=2, arguments={"file_path": "a.js"}),
    ]
    new = "\n".join(lines[:1] + ["const value_1 = compute(100);"] + lines[2:]) + "\n"
    write = _call("c2", "Write", file_path="a.js", content=new)
    assert _check(history, [*history[:2], truncate_chars(history[2], 500)], write) == []
    (edit, *_) = _check(history, history[:2], write)  # the read dropped: lines 1 to 3 hidden
    assert edit.excerpt.splitlines() == [
        "const value_0 = compute(0);", "const value_1 = compute(1);", "const value_2 = compute(2);"
    ]


def test_a_table_whose_rows_start_with_a_number_and_a_tab_is_read_as_it_is() -> None:
    """Rows `7<tab>Alice` do not count lines: they are the file's own text."""
    table = "".join(f"{n * 7}\tname_{n}\n" for n in range(1, 30))
    assert _blind._file_text(table) == table
    numbered = "".join(f"{n}\t{n * 7}\tname_{n}\n" for n in range(1, 30))
    assert _blind._file_text(numbered) == table


def test_one_loss_is_one_row() -> None:
    # Two edits of one response to one cut file: one stubbed-read row, not one per edit.
    second = _call("c3", "edit_file", path="src/calc.py", old_string="def price_with_tax(",
                   new_string="def price(")
    kinds = [a.kind for a in _check_cut_read(EDIT, second)]
    assert kinds.count("stubbed-read") == 1


@pytest.mark.parametrize(("quoted", "flagged"), [("E40213", True), ("E4021", False)])
def test_a_quote_counts_from_six_characters(quoted: str, flagged: bool) -> None:
    """A quotable piece is a letter and at least five more characters: shorter codes recur by
    chance (and a substring of a hidden code is not a quote of it)."""
    history = [
        UserItem("The export fails.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "FAILED export: error E40213 (E4021x)", event_index=2),
    ]
    actions = _check(history, history[:2], _call("c2", "grep", pattern=quoted))
    assert [a.excerpt for a in actions] == ([quoted] if flagged else [])


def _conf_read(output: str) -> list:
    """The task, a read of `conf.ini` and its result `output`: a view of `history[:2]` hides
    the result."""
    return [
        UserItem("Rotate the key.", event_index=0),
        AssistantItem((_call("c1", "read_file", path="conf.ini"),), event_index=1),
        ToolResultItem("c1", "read_file", output, event_index=2, arguments={"path": "conf.ini"}),
    ]


def _named(history: list, *texts: str) -> list[tuple[str, str]]:
    """The rows (kind, excerpt) of a response of `texts` checked against the view
    `history[:2]`."""
    said = AssistantItem(tuple(Block("text", text) for text in texts))
    return [(a.kind, a.excerpt)
            for a in EvidenceChecker().check(history, history[:2], said, 3, "req-4")]


def test_the_agents_text_naming_what_only_hidden_text_held_is_a_mention() -> None:
    """A response that names an exact thing (a key, a path, an identifier) only a hidden result
    held is a `hidden-mention`, apart from the actions; plain words are never quotes."""
    history = _conf_read("key = ZEBRA_QUUX_4417  # straightforward")
    said = AssistantItem((Block("text", "Applied key ZEBRA_QUUX_4417, straightforward."),))
    found = EvidenceChecker().check(history, history[:2], said, 3, "req-4")
    assert [(a.kind, a.tool, a.path, a.excerpt) for a in found] == [
        (HIDDEN_MENTION, "", None, "ZEBRA_QUUX_4417")
    ]
    assert EvidenceChecker().check(history, list(history), said, 3, "req-4") == []


def test_a_view_identical_to_the_history_never_flags() -> None:
    history = _history()
    copies = [
        history[0],
        AssistantItem(history[1].blocks, event_index=1),
        ToolResultItem("c1", "read_file", CALC, event_index=2),
    ]
    write = _call("c3", "write_file", path="src/calc.py",
                  content=_rewritten(CALC, CALC.splitlines().index(TARGET), "    return 0"))
    grep = _call("c4", "grep", pattern="price_with_tax")
    for view in (history, list(history), copies):  # the same objects, or equal ones
        assert _check(history, view, EDIT, write, grep) == []


def test_no_tool_call_no_flag() -> None:
    history = _history()
    assert _check(history, history[:1]) == []
    assert EvidenceChecker().check(history, history[:1], None, 3, "req-4") == []


# --- hand-made logs through strategies ------------------------------------------------------


def _edit_session():
    """Read src/calc.py (the line to fix sits after character 1,000), a large unrelated test
    log, then an edit of that line."""
    big_log = "not ok 7 - rounding\n" + gen.filler(9000, 3)
    return build_session(
        [
            Turn("Reading.", [Call("read_file", {"path": "src/calc.py"}, CALC)]),
            Turn("Tests.", [Call("run_tests", {}, big_log, True)]),
            Turn("Fixing.", [Call("edit_file", {"path": "src/calc.py", "old_string": TARGET,
                                                "new_string": "    return 0"}, "ok")]),
            Turn("Done."),
        ],
        provider="anthropic",
    )


def test_strategies_on_an_edit_log() -> None:
    result = replay.replay(_edit_session(), ["baseline", "truncate-500", "truncate-5000",
                                             "age-truncate-200-keep-0"])
    blind = dict(zip(result.summary["strategy"], result.summary["blind_actions"], strict=True))
    # truncate-5000 only cuts the test log; the other two cut the line the edit replaces.
    assert blind == {"baseline": 0, "truncate-5000": 0, "truncate-500": 1,
                     "age-truncate-200-keep-0": 1}
    for name in ("truncate-500", "age-truncate-200-keep-0"):
        actions = [a for r in result.records if r.strategy == name for a in r.blind_actions]
        assert {a.request_index for a in actions} == {2}
        assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
        assert actions[0].excerpt == TARGET.strip()


def _sliding_session():
    """The path of the file to read next appears only in an early listing."""
    listing = "src/app.py\nsrc/handlers/refund_policy.py\nsrc/util.py\n"
    turns = [Turn("Listing.", [Call("list_files", {"dir": "src"}, listing)])]
    turns += [
        Turn(f"Step {i}.", [Call("read_file", {"path": f"lib/mod_{i}.py"}, f"x = {i}\n")])
        for i in range(3)
    ]
    turns += [
        Turn("Reading the handler.",
             [Call("read_file", {"path": "src/handlers/refund_policy.py"}, "def refund(): ...")]),
        Turn("Done."),
    ]
    return build_session(turns, provider="openai")


def test_sliding_window_that_dropped_the_listing_flags_the_quoted_path() -> None:
    result = replay.replay(_sliding_session(), ["baseline", "sliding-4", "sliding-40"])
    blind = dict(zip(result.summary["strategy"], result.summary["blind_actions"], strict=True))
    assert blind == {"baseline": 0, "sliding-4": 1, "sliding-40": 0}
    [action] = [a for r in result.records for a in r.blind_actions]
    assert (action.kind, action.tool, action.path, action.request_index) == (
        "hidden-quote", "read_file", "src/handlers/refund_policy.py", 4
    )
    assert action.excerpt == "src/handlers/refund_policy.py"


def test_baseline_and_recorded_never_flag_on_the_deterministic_log() -> None:
    session = gen.deterministic_session()
    result = replay.replay(session, ["baseline", "recorded"])
    assert result.summary["blind_actions"].to_list() == [0, 0]


# --- the recommendation ---------------------------------------------------------------------


def _summary(rows):
    return pl.DataFrame(
        [{"strategy": s, "cost_usd": Decimal(c), "blind_actions": b} for s, c, b in rows],
        schema={"strategy": pl.Utf8, "cost_usd": pl.Decimal(38, 12), "blind_actions": pl.Int64},
    )


def test_recommendation_is_the_cheapest_unflagged_strategy() -> None:
    summary = _summary([("recorded", "1.00", 0), ("baseline", "1.00", 0),
                        ("cheap-but-blind", "0.20", 3), ("b-safe", "0.50", 0),
                        ("a-safe", "0.50", 0), ("dear", "2.00", 0)])
    rec = recommendation(summary)
    assert rec["strategy"] == "a-safe"  # the cheapest with no flag; ties by name
    assert (rec["reference"], rec["reference_cost_usd"]) == ("recorded", Decimal("1.00"))
    assert rec["saving_usd"] == Decimal("0.50") and rec["saving_ratio"] == 0.5
    assert rec["beats_reference"] is True
    line = recommendation_line(rec)
    assert line.startswith("Cheapest strategy without evidence-loss flags: a-safe at $0.5000")
    assert "saving $0.5000 (50.0%) vs recorded ($1.0000)" in line


def test_the_recommendation_writes_money_as_the_tables_do() -> None:
    """The line under the table wrote `:.4f`: a saving under $0.00005 read "saving $0.0000"
    and a $1,234 bill had no separator, beside a table that writes both as `usd` does."""
    rec = recommendation(_summary([("recorded", "1234.5", 0), ("a-safe", "1234.49997", 0)]))
    assert "at $1,234.5000, saving $0.000030 (0.0%) vs recorded ($1,234.5000)." in (
        recommendation_line(rec)
    )


def test_recommendation_edge_cases() -> None:
    no_reference = _summary([("a-safe", "0.50", 0)])
    assert recommendation(no_reference) is None
    all_blind = _summary([("baseline", "1.00", 1), ("x", "0.5", 2)])
    assert recommendation(all_blind) is None
    assert recommendation_line(None) == (
        "No strategy without evidence-loss flags or prompts over the window to recommend."
    )
    # Which of the two: a reference was replayed (every strategy flagged), or none was. A
    # flagged reference is named with its count: the bar to compare with (README).
    assert recommendation_line(None, all_blind) == recommendation_line(None) + (
        " `baseline` itself has 1 blind action(s): compare each strategy's `blind_actions` with "
        "that count."
    )
    for without in (no_reference, _summary([("x", "0.5", 0), ("y", "0.6", 0)])):
        assert recommendation_line(None, without) == (
            "No recommendation: add `recorded` or `baseline` to compare against."
        )
    only_recorded = _summary([("recorded", "1.00", 1)])
    assert recommendation_line(recommendation(only_recorded), only_recorded).startswith(
        recommendation_line(None) + " `recorded` itself has 1 blind action(s)"
    )
    nothing_beats = recommendation(_summary([("baseline", "1.00", 0), ("x", "0.50", 1)]))
    assert nothing_beats["strategy"] == "baseline" and nothing_beats["saving_usd"] == 0
    assert "no strategy without flags beats baseline" in recommendation_line(nothing_beats)
    assert nothing_beats["beats_reference"] is False
    # The agent's own run flagged: the cheapest unflagged strategy costs more, and says so.
    dearer = recommendation(_summary([("recorded", "1.00", 2), ("baseline", "1.10", 0)]))
    assert (dearer["strategy"], dearer["saving_usd"]) == ("baseline", Decimal("-0.10"))
    assert dearer["beats_reference"] is False
    assert "no strategy without flags beats recorded" in recommendation_line(dearer)
    assert recommendation(_summary([])) is None



def test_recommendation_skips_strategies_over_the_window_and_ties_go_to_the_reference() -> None:
    summary = _summary([("recorded", "1.00", 0), ("a-ties", "1.00", 0), ("dear", "3.00", 0),
                        ("b-overflows", "0.40", 0)]).with_columns(
        over_window=pl.Series([0, 0, 0, 7]))
    rec = recommendation(summary)
    assert rec["strategy"] == "recorded" and rec["saving_usd"] == 0  # not the tie, not overflow
    assert "no strategy without flags beats recorded" in recommendation_line(rec)
    fits = summary.with_columns(over_window=pl.Series([0, 0, 0, 0]))
    assert recommendation(fits)["strategy"] == "b-overflows"

def test_recommendation_on_a_log_skips_the_cheaper_blind_strategies() -> None:
    result = replay.replay(_edit_session(), ["baseline", "truncate-500", "truncate-5000",
                                             "age-truncate-200-keep-0"])
    cost = dict(zip(result.summary["strategy"], result.summary["cost_usd"], strict=True))
    assert cost["age-truncate-200-keep-0"] < cost["truncate-5000"]
    assert cost["truncate-500"] < cost["truncate-5000"] < cost["baseline"]
    rec = recommendation(result.summary)
    assert rec["strategy"] == "truncate-5000"
    assert rec["reference"] == "baseline"
    assert rec["saving_usd"] == cost["baseline"] - cost["truncate-5000"] > 0


def test_run_json_and_line_recommend_the_cheapest_unflagged(run42_doc, invoke) -> None:
    rows = run42_doc["summary"]
    safe = sorted((r for r in rows if r["blind_actions"] == 0),
                  key=lambda r: (r["cost_usd"], r["strategy"]))
    rec = run42_doc["recommendation"]
    assert rec["strategy"] == safe[0]["strategy"]
    # truncate-500 is cheaper than the baseline on this run, but it hid the fix.
    cost = {r["strategy"]: r["cost_usd"] for r in rows}
    assert cost["truncate-500"] < cost["baseline"]
    assert rec["strategy"] != "truncate-500"
    assert rec["reference"] == "baseline"
    table = invoke("run", RUN42, "-s", "baseline,truncate-500,append-supersede")
    assert table.exit_code == 0, table.stderr
    assert "Cheapest strategy without evidence-loss flags: append-supersede at $" in (
        " ".join(table.stderr.split())
    )

    # From Python: the same recommendation and line, on the result.
    import replay

    result = replay.replay(RUN42, "baseline,truncate-500,append-supersede")
    assert result.recommendation["strategy"] == "append-supersede"
    assert result.recommendation["reference"] == "baseline"
    assert result.recommendation_line in " ".join(table.stderr.split())
    assert replay.replay(RUN42, "truncate-500").recommendation_line == (
        "No recommendation: add `recorded` or `baseline` to compare against."
    )


# --- the incremental checker against a straightforward one -----------------------------------
#
# `EvidenceChecker` keeps indexes per thread between requests. The reference below is the
# checker as it was before them: per request it joins the texts of the whole history and of the
# whole view and searches those, and scans the history for a file's last content. On random
# histories (growing, sometimes rewritten in place) and random views (kept, cut, truncated,
# dropped, summarised, copied items), one checker across all requests of a run must flag exactly
# what the reference flags at each request.


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for v in value for s in _strings(v)] if isinstance(value, list) else []


def _reference_check(
    history, view, response, request_index, request_id, cwd=""
) -> list[BlindAction]:
    prose = [] if response is None else [b.text for b in response.blocks if b.type == "text"]
    if response is None or not (response.tool_calls or any(prose)):
        return []
    if len(view) == len(history) and all(a is b for a, b in zip(view, history, strict=True)):
        return []
    def shown(item) -> str:  # its text, and its calls' string arguments as they are
        raw = [s for b in getattr(item, "tool_calls", ()) for s in _strings(b.arguments)]
        return "\n".join([item_text(item), *raw])

    visible = "\n".join(map(shown, view))
    full = "\n".join(map(shown, history))

    def hidden(text: str) -> bool:
        if not (text and text not in visible and text in full):
            return False
        # under the working directory, the relative form shown shows the path
        relative = text[len(cwd.rstrip("/")) + 1 :] if cwd.strip("/") and text.startswith(
            cwd.rstrip("/") + "/") else text
        return relative == text or not _blind._QUOTABLE.fullmatch(relative) or (
            relative not in visible)

    def last_known(path):
        calls, content, source = {}, None, None
        for item in history:
            if isinstance(item, AssistantItem):
                for b in item.tool_calls:
                    if b.call_id:
                        calls[b.call_id] = b
                    if _blind._WRITE_TOOL.search(b.name or "") and path_of(b.arguments) == path:
                        written = _blind._first(b.arguments, _blind._CONTENT_KEYS)
                        if written is not None:
                            content, source = written, None
            elif isinstance(item, ToolResultItem) and not item.is_error:
                call = calls.get(item.call_id)
                if call is None or path_of(call.arguments) != path:
                    continue
                name = call.name or ""
                if (_blind._READ_TOOL.search(name) and not _blind._WRITE_TOOL.search(name)
                        and not reads_part_of_file(call.arguments)
                        and _blind._file_text(item.output) is not None):
                    content, source = _blind._file_text(item.output), item
        return content, source

    found = []
    for call in response.tool_calls:
        name, path = call.name or "", path_of(call.arguments)
        action = partial(BlindAction, request_index, request_id, name)
        if _blind._WRITE_TOOL.search(name) and _blind._edits_a_file(call.arguments):
            path, old_lines = _blind._old_lines(call.arguments)
            action = partial(BlindAction, request_index, request_id, name)
            needed = []
            if old_lines is not None:
                needed = old_lines
            elif path is not None:
                new = _blind._first(call.arguments, _blind._CONTENT_KEYS)
                old, _ = last_known(path)
                if new is not None and old is not None:
                    needed = _blind._change_context(old, new)
            lines = [ln for ln in needed if hidden(ln)]
            if not lines:
                continue
            found.append(action("hidden-edit-target", path, _blind._short("\n".join(lines))))
            if path is not None:
                _, read = last_known(path)
                shown = next((i for i in view if isinstance(i, ToolResultItem) and read is not None
                              and i.event_index == read.event_index), None)
                if shown is not None and shown.original_chars is not None:
                    found.append(action("stubbed-read", path, _blind._short(shown.output)))
        else:
            pieces = []
            for value in _strings(call.arguments):
                for piece in dict.fromkeys(_blind._QUOTABLE.findall(value)):
                    if _blind._names_something(piece) and hidden(piece) and piece not in pieces:
                        pieces.append(piece)
            pieces += [p for p in _blind._phrases(_strings(call.arguments))
                       if p not in pieces and hidden(p)]
            if pieces:
                found.append(action("hidden-quote", path, _blind._short(", ".join(pieces))))
    named = []  # the response's own text: only exact names count
    for text in prose:
        for piece in dict.fromkeys(_blind._QUOTABLE.findall(text)):
            if _blind._names_something(piece) and hidden(piece) and piece not in named:
                named.append(piece)
    if named:
        found.append(BlindAction(request_index, request_id, "", HIDDEN_MENTION, None,
                                 _blind._short(", ".join(named))))
    return list(dict.fromkeys(found))


# Few distinct lines, paths and names, so that quotes, edits and rewrites hit text that some
# items hold and others (cut, dropped) do not; some never appear in any item.
_PATHS = ["src/app/core.py", "src/app/util.py", "app/core.py", "tests/test_core.py"]
_NAMES = ["compute_total", "InvalidTokenError", "tax_rate", "compute", "src/app", "never_seen_x",
          "/repo/src/app/util.py", "/repo/app", "/repo/"]
_LINES = [
    "def compute_total(items):",
    "    return sum(i.price for i in items) * tax_rate",
    "raise InvalidTokenError('bad')",
    "import app.core as core",
    "x = 1",
    "# see src/app/util.py",
    "value = compute(tax_rate)",
    "  \t  ",
    "class Widget: pass  # naïve",
    # These hold the lines `value = …` and `return sum(…) * tax_rate` with their first or
    # last token inside a longer one.
    "prefix_value = compute(tax_rate)",
    "return sum(i.price for i in items) * tax_rate_total",
]
# Lines only tool outputs show (an edit quoting one relies on a read, not on an earlier call).
_OUTPUT_LINES = ["    total += item.cost", "    if not token: return None", "TOKEN_TTL = 300"]
_line_text = st.lists(st.sampled_from(_LINES), max_size=6).map("\n".join)
_output_text = st.lists(st.sampled_from(_LINES + _OUTPUT_LINES), max_size=8).map("\n".join)
_rarely = st.sampled_from([False, False, False, True])
_often = _rarely.map(lambda b: not b)
# What an agent says: names and lines quoted in prose, and plain words (never a quote).
_prose = st.lists(
    st.sampled_from([*_NAMES, *_LINES, *_OUTPUT_LINES, "Everything looks straightforward."]),
    max_size=3,
).map(" ".join)
_tool_names = st.sampled_from(["read_file", "read_file", "view", "grep", "edit_file",
                               "write_file", "str_replace", "run_tests", "create"])


@st.composite
def _tool_call(draw: st.DrawFn, call_id: str, lines: st.SearchStrategy[str]) -> Block:
    name = draw(_tool_names)
    arguments: dict = {}
    if draw(_often):
        arguments["path"] = draw(st.sampled_from([*_PATHS[:2], *_PATHS, ""]))
    if draw(st.booleans()):
        arguments["pattern"] = draw(st.sampled_from(_NAMES))
    if draw(_rarely):  # a read of a range of lines
        arguments[draw(st.sampled_from(["offset", "limit", "view_range"]))] = draw(
            st.sampled_from([1, 40, [3, 9], None]))
    edit = draw(st.sampled_from(["none", "old", "content", "both"]))
    if edit in ("old", "both"):
        arguments["old_string"] = draw(lines)
    if edit in ("content", "both"):
        arguments["content"] = draw(lines)
    if draw(st.booleans()):
        arguments["args"] = [draw(st.sampled_from(_NAMES)), {"deep": draw(st.sampled_from(_PATHS))}]
    return Block("tool_call", call_id=call_id, name=name, arguments=arguments)


def _view_of(draw: st.DrawFn, history: list, summaries: list) -> list:
    """A view as some strategy might build it, often sharing a prefix with the previous one."""
    kind = draw(st.sampled_from(["same", "copy", "window", "truncate", "mixed", "summary",
                                 "in-place"]))
    if kind == "same":
        return history
    if kind == "copy":
        return list(history)
    if kind == "in-place":  # one item replaced, every later one the same object at its place
        view = list(history)
        n = draw(st.integers(0, len(view) - 1))
        view[n] = truncate_chars(view[n], 5) if isinstance(view[n], ToolResultItem) else (
            SummaryItem(draw(_line_text)))
        return view
    if kind == "window":
        return history[-draw(st.integers(1, 6)):]
    limit = draw(st.sampled_from([5, 20, 60]))
    if kind == "truncate":  # the same derived objects on every request (memoized)
        return [truncate_chars(i, limit) if isinstance(i, ToolResultItem) else i
                for i in history]
    if kind == "mixed":
        view = []
        for item in history:
            what = draw(st.sampled_from(["keep", "keep", "drop", "cut", "copy"]))
            if what == "keep":
                view.append(item)
            elif what == "cut" and isinstance(item, ToolResultItem):
                view.append(truncate_chars(item, limit))
            elif what == "copy":
                view.append(dataclasses.replace(item))
        return view
    if not summaries or draw(st.booleans()):
        summaries.append(SummaryItem(draw(_line_text)))
    return [summaries[-1], *history[-draw(st.integers(0, 4)):]]


@given(st.data())
@settings(max_examples=200)
def test_incremental_checker_equals_the_straightforward_one(data) -> None:
    """Two checkers replay the same run one after the other, each with its own views, as
    strategies do over one log: what the first learnt about the history (answers shared by
    every checker of the process) must serve the second as if it had found it itself."""
    draw = data.draw
    if draw(st.booleans()):  # answers shared from earlier examples, or each one found afresh
        forget_shared_answers()
    # Windows of the search back through the agent's messages small enough to have edges here.
    with mock.patch.object(_blind, "_FIRST_WINDOW", draw(st.sampled_from([1, 2, 64]))):
        _replay_plan_twice(draw)


def _replay_plan_twice(draw: st.DrawFn) -> None:
    plan = []  # per request: the thread, its changes (appended items, or one item replaced)
    lengths, n = [1, 0], 1
    for request in range(draw(st.integers(1, 14))):
        which = draw(st.integers(0, 1))
        changes: list[tuple] = []
        step = draw(st.sampled_from(["turn", "turn", "turn", "user", "rewrite"]))
        if step == "user":
            changes.append(("append", UserItem(draw(_line_text), event_index=n)))
        elif step == "rewrite" and lengths[which]:  # not what the engine does: in place
            position = draw(st.integers(0, lengths[which] - 1))
            changes.append(("replace", position, UserItem(draw(_line_text))))
        else:
            calls = [draw(_tool_call(f"c{n}-{k}", _line_text))
                     for k in range(draw(st.integers(1, 3)))]
            changes.append(("append", AssistantItem(tuple(calls), event_index=n)))
            for call in calls:
                n += 1
                changes.append(("append", ToolResultItem(
                    draw(st.sampled_from([call.call_id, call.call_id, "c-unknown"])), call.name,
                    draw(_output_text), is_error=draw(_rarely), event_index=n,
                    arguments=call.arguments)))
        n += 1
        lengths[which] += sum(change[0] == "append" for change in changes)
        calls = [draw(_tool_call(f"r{request}-{k}", _output_text))
                 for k in range(draw(st.integers(0, 3)))]
        said = draw(_prose)
        blocks = ((Block("text", said),) if said else ()) + tuple(calls)
        response = AssistantItem(blocks) if blocks or draw(st.booleans()) else None
        plan.append((which, changes, response))
    cwd = draw(st.sampled_from(["", "", "/repo", "/repo/", "/repo/src", "/"]))
    for _strategy in range(2):
        checker = EvidenceChecker()
        threads = [[UserItem("Fix compute_total in src/app/core.py.", event_index=0)], []]
        rewritten = [False, False]  # a thread only appended to is checked as the engine does it
        summaries: list = []
        for request, (which, changes, response) in enumerate(plan):
            history = threads[which]
            for change in changes:
                if change[0] == "append":
                    history.append(change[1])
                else:
                    history[change[1]] = change[2]
                    rewritten[which] = True
            if not history:
                continue
            view = _view_of(draw, history, summaries)
            expected = _reference_check(history, view, response, request, f"req-{request}", cwd)
            grown = not rewritten[which]
            assert checker.check(
                history, view, response, request, f"req-{request}", grown=grown, cwd=cwd
            ) == expected


def test_evidence_rows_are_kept_only_when_asked_for_without_records() -> None:
    """A streamed replay (records not kept: the CLI's) keeps the evidence rows only on request
    (an excerpt each: thousands with `all` on a long log); kept records give them anyway."""
    names = ["truncate-500", "sliding-10"]
    full = replay.replay(RUN42, names)
    streamed = replay.replay(RUN42, names, keep_records=False, per_turn=False, evidence=True)
    assert full.evidence.height > 0
    assert streamed.evidence.equals(full.evidence)
    bare = replay.replay(RUN42, names, keep_records=False, per_turn=False)
    with pytest.raises(ReplayError, match="evidence=True"):
        bare.evidence  # noqa: B018


# --- pinned by mutation testing -------------------------------------------------------------


def _raised():
    return [
        UserItem("Go.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "raised InvalidTokenSignature", event_index=2),
    ]


def test_a_write_tool_s_input_that_is_no_patch_is_quote_checked() -> None:
    """An `input` argument is a patch only when it names a file to update, add or delete: a
    write tool's other input (`write_stdin`) is checked for quotes, as any call is."""
    history = _raised()
    stdin = _call("c2", "write_stdin", session_id=1, input="grep InvalidTokenSignature src\n")
    assert [a.kind for a in _check(history, history[:2], stdin)] == ["hidden-quote"]


def test_a_write_tool_with_a_content_but_no_path_is_quote_checked() -> None:
    """A whole content changes a file only with the file's path: without one the call is no
    edit, and its arguments are checked for quotes."""
    history = _raised()
    note = _call("c2", "write_note", content="InvalidTokenSignature comes from auth")
    assert [a.kind for a in _check(history, history[:2], note)] == ["hidden-quote"]


_PATCH_AROUND_ITS_UPDATE = f"""*** Begin Patch
*** Add File: src/new_module.py
+print("new")
*** Update File: src/calc.py
@@ def price_with_tax(price, qty):
-{TARGET}
+    return price * qty * (1 + tax_rate)
*** Update File: docs/notes.md
@@
-old note
+new note
*** End Patch"""


@pytest.mark.parametrize(
    "patch",
    [
        _PATCH_AROUND_ITS_UPDATE,
        f"*** Begin Patch\n*** Update File: src/calc.py  \n@@\n-{TARGET}\n+x\n*** End Patch",
    ],
    ids=["first-updated-file", "header-spaces-trimmed"],
)
def test_a_patch_is_checked_against_the_file_its_header_updates(patch: str) -> None:
    """The edit is of the first updated file: a patch that adds a file before it updates one,
    and updates another after, is checked against `src/calc.py`; and
    `*** Update File: src/calc.py ` names `src/calc.py` (apply_patch trims its headers). That
    file is the row's path, and its cut read is the stub."""
    actions = _check_cut_read(_call("c2", "apply_patch", input=patch))
    assert [(a.kind, a.path) for a in actions] == [
        ("hidden-edit-target", "src/calc.py"),
        ("stubbed-read", "src/calc.py"),
    ]


def test_a_patch_s_context_lines_are_old_text_it_needs() -> None:
    """The context lines of a patch must be in the file as its removed lines must: one only
    hidden text held is a hidden edit target even when the removed line is shown."""
    patch = f"""*** Begin Patch
*** Update File: src/calc.py
@@
-def helper_0(x):
 {TARGET}
+def helper_zero(x):
*** End Patch"""
    actions = _check_cut_read(_call("c2", "apply_patch", input=patch))
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert actions[0].excerpt == TARGET.strip()


def test_an_empty_list_of_edits_with_a_whole_content_is_a_whole_file_write() -> None:
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return price * qty * 1.2")
    write = _call("c2", "write_file", path="src/calc.py", content=new, edits=[])
    assert [a.kind for a in _check_cut_read(write)] == ["hidden-edit-target", "stubbed-read"]


def test_an_excerpt_is_cut_only_past_its_limit() -> None:
    limit = _blind._MAX_EXCERPT
    assert _blind._short("x" * limit) == "x" * limit
    assert _blind._short(" " + "y" * limit + "\n") == "y" * limit
    cut = _blind._short("z" * (limit + 1))
    assert cut == "z" * (limit - 1) + "…" and len(cut) == limit


def test_a_read_that_failed_is_not_the_file_s_content() -> None:
    """An error result (a read of a missing file) holds no content of the file: a whole-file
    write is no change of the error's lines, hidden or not."""
    error = "Error: ENOENT src/calc_v2.py\ncould not open the requested file for reading"
    history = [
        UserItem("Create the module.", event_index=0),
        AssistantItem((_call("c1", "read_file", path="src/calc_v2.py"),), event_index=1),
        ToolResultItem("c1", "read_file", error, is_error=True, event_index=2,
                       arguments={"path": "src/calc_v2.py"}),
    ]
    write = _call("c2", "write_file", path="src/calc_v2.py", content="def price():\n    return 1\n")
    assert _check(history, history[:2], write) == []


def test_a_line_first_asked_about_before_the_history_held_it_is_found_once_it_does() -> None:
    """The history's memo of where a line was searched for without success: the texts added
    after it, the first one included, are searched at the next question."""
    forget_shared_answers()
    checker = EvidenceChecker()
    history = _history()[:2]
    edit = _call("c2", "edit_file", path="src/calc.py", old_string=TARGET, new_string="x")
    response = AssistantItem((edit,))
    assert checker.check(history, history[:1], response, 1, "r1", grown=True) == []
    history.append(_history()[2])  # the read, holding the line, in the text right after
    actions = checker.check(history, history[:2], response, 2, "r2", grown=True)
    assert [a.kind for a in actions] == ["hidden-edit-target"]


def test_the_history_s_tokens_match_a_piece_only_inside_one_token() -> None:
    """The distinct tokens are searched joined by spaces: a piece that spans the end of one
    token and the start of another (in whichever order the tokens were joined) is not held."""
    forget_shared_answers()
    history = _blind._History()
    history.sync([UserItem("alpha_one beta_two")])
    assert history.holds("alpha_one") and history.holds("a_two")
    assert not history.holds("_onebeta") and not history.holds("_twoalpha")


def test_a_history_changed_in_place_is_checked_against_a_view_indexed_again() -> None:
    """A history list changed other than by growing is indexed again from scratch, and so is
    the view checked against it: what the view's items hold is not read through the old
    history's own messages (an item that was one of them no longer is)."""
    forget_shared_answers()
    line = "retry_budget = compute_budget(attempts)"
    said = AssistantItem((Block("text", text=f"I will set {line}"),), event_index=1)
    history = [UserItem("Go.", event_index=0), said]
    checker = EvidenceChecker()
    response = AssistantItem((_call("c9", "edit_file", path="a.py", old_string=line,
                                    new_string="x"),))
    assert checker.check(history, [said], response, 1, "r1") == []
    history[1] = AssistantItem((Block("text", text="something else"),), event_index=1)
    history.append(ToolResultItem("c1", "read_file", line, event_index=2))
    # The view still holds the earlier message, which shows the line.
    assert checker.check(history, [said], response, 2, "r2") == []


def test_an_edit_whose_file_was_read_in_full_has_no_stubbed_read() -> None:
    """The edit's old text came from a hidden result, but the file's read is in the view as it
    was: a hidden edit target, with no stub to read again."""
    line = "    return price * qty + tax_rate  # see TAX-118"
    history = [
        *_history(),
        AssistantItem((_call("c3", "grep", pattern="TAX-118"),), event_index=3),
        ToolResultItem("c3", "grep", f"src/calc.py:62:{line}", event_index=4),
    ]
    view = [*history[:4], ToolResultItem("c3", "grep", "[cleared]", event_index=4,
                                         original_chars=len(line) + 15)]
    edit = _call("c4", "edit_file", path="src/calc.py", old_string=line, new_string="x")
    actions = _check(history, view, edit)
    assert [(a.kind, a.path) for a in actions] == [("hidden-edit-target", "src/calc.py")]


def test_a_piece_named_in_two_texts_of_one_response_is_one_mention() -> None:
    history = _conf_read("key = ZEBRA_QUUX_4417")
    assert _named(history, "The key is ZEBRA_QUUX_4417 here", "Rotating ZEBRA_QUUX_4417 now") == [
        (HIDDEN_MENTION, "ZEBRA_QUUX_4417")
    ]


def test_an_item_the_view_held_twice_still_shows_its_text_once_one_copy_is_cut() -> None:
    """A view may hold one item twice; cutting the second copy leaves the first, whose text is
    shown (the agent's own message, looked up among the history's)."""
    forget_shared_answers()
    line = "retry_budget = compute_budget(attempts)"
    said = AssistantItem((Block("text", text=f"I will set {line}"),), event_index=1)
    result = ToolResultItem("c1", "run_tests", "2 failed", event_index=2)
    history = [UserItem("Go.", event_index=0), said, result]
    checker = EvidenceChecker()

    def edit(old):
        return AssistantItem((_call("c9", "edit_file", path="a.py", old_string=old,
                                    new_string="x"),))

    # The first check syncs the view holding the message twice (about another line).
    assert checker.check(history, [*history[:2], said], edit("Go."), 1, "r1", grown=True) == []
    assert checker.check(history, history[:2], edit(line), 2, "r2", grown=True) == []


def test_a_read_is_taken_for_numbered_lines_from_half_of_its_lines() -> None:
    """Claude Code's numbered read (`    16→`) and an editor's `cat -n` view are recognised
    when at least half of the output's lines are numbered; fewer, and the output is the
    file's content as it is."""
    half = "     1→alpha\n     2→beta\ngamma\ndelta"  # 2 numbered of 4 lines
    assert _blind._file_text(half) == "alpha\nbeta\ngamma\ndelta\n"
    fewer = "     1→alpha\nbeta\ngamma\ndelta"
    assert _blind._file_text(fewer) == fewer
    viewed = "Here's the result of running `cat -n` on a.py:\n     1\talpha\n     2\tbeta\nend"
    assert _blind._viewed_text(viewed.replace("\nend", "")) == "alpha\nbeta\n"
    two_of_four = "header\n     1\talpha\n     2\tbeta\nend"
    assert _blind._viewed_text(two_of_four) == "alpha\nbeta\n"
    assert _blind._viewed_text("header\n     1\talpha\nmore\nend") == (
        "header\n     1\talpha\nmore\nend"
    )


def test_signatures_shared_with_a_shorter_history_still_sign_every_later_message() -> None:
    """The signatures of the agent's messages are shared by every replay of a log: a replay
    that asks about fewer messages than another has signed leaves the later signatures as
    they are, and those of messages added after are each one's own."""
    forget_shared_answers()
    lines = [f"set retry_budget_{k} to compute_budget of attempts {k}" for k in range(14)]
    said = [AssistantItem((Block("text", text=f"I will {ln}"),), event_index=k + 1)
            for k, ln in enumerate(lines)]
    start = UserItem("Go.", event_index=0)

    def ask(checker, history, k):
        result = ToolResultItem("c1", "run_tests", "2 failed", event_index=99)
        edit = AssistantItem((_call("c9", "edit_file", path="a.py", old_string=lines[k],
                                    new_string="x"),))
        return checker.check([*history, result], history, edit, k, f"r{k}")

    assert ask(EvidenceChecker(), [start, *said[:12]], 11) == []  # signs 12 messages
    assert ask(EvidenceChecker(), [start, *said[:5]], 2) == []  # another replay, earlier on
    assert ask(EvidenceChecker(), [start, *said], 13) == []  # two more messages signed


def test_each_phrase_a_command_quotes_is_found_whole() -> None:
    """Two phrases quoted in one command are two phrases, not the text between their quotes."""
    command = 'grep -n "Preview theme" a.ts | grep -v "Dark mode toggle"'
    assert _blind._phrases([command]) == ["Preview theme", "Dark mode toggle"]
    assert _blind._phrases(["echo 'Save draft' && echo 'Save draft'"]) == ["Save draft"]


def test_a_phrase_quoted_twice_in_one_call_is_one_quote() -> None:
    history = [
        UserItem("Where is it?", event_index=0),
        AssistantItem((_call("c1", "read_file", path="a.ts"),), event_index=1),
        ToolResultItem("c1", "read_file", "// Preview theme switch\nexport {}", event_index=2,
                       arguments={"path": "a.ts"}),
    ]
    grep = _call("c2", "bash", command='grep -n "Preview theme" a.ts; grep -c "Preview theme" b')
    assert [(a.kind, a.excerpt) for a in _check(history, history[:2], grep)] == [
        ("hidden-quote", "Preview theme")
    ]


def _write_of_target(name="write_file", key="content"):
    new = _rewritten(CALC, CALC.splitlines().index(TARGET), "    return price * qty * 1.2")
    return _call("c2", name, path="src/calc.py", **{key: new})


@pytest.mark.parametrize("name", ["view", "cat_file", "open_file"])
def test_a_tool_named_as_a_read_shows_the_file_s_content(name: str) -> None:
    """`view`, `cat`, `open` name reads as `read` does: the result is the file's last known
    content, against which a whole-file write's changed lines are found."""
    history = [
        UserItem("The tax is wrong.", event_index=0),
        AssistantItem((_call("c1", name, path="src/calc.py"),), event_index=1),
        ToolResultItem("c1", name, CALC, event_index=2, arguments={"path": "src/calc.py"}),
    ]
    actions = _check(history, history[:2], _write_of_target())
    assert [(a.kind, a.excerpt.splitlines()) for a in actions] == [
        ("hidden-edit-target", ["def price_with_tax(price, qty):", TARGET.strip()])
    ]


@pytest.mark.parametrize("key", ["content", "file_text", "text", "contents"])
def test_every_content_key_is_a_whole_file_write(key: str) -> None:
    actions = _check_cut_read(_write_of_target(key=key))
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert actions[0].excerpt.splitlines() == ["def price_with_tax(price, qty):", TARGET.strip()]


def test_a_quoted_single_word_is_no_phrase() -> None:
    """A phrase is words quoted together; one plain word quoted is still a plain word."""
    history = [
        UserItem("Summarize.", event_index=0),
        AssistantItem((_call("c1", "run_tests"),), event_index=1),
        ToolResultItem("c1", "run_tests", "everything straightforward here", event_index=2),
    ]
    grep = _call("c2", "bash", command='grep -rn "straightforward" src')
    assert _check(history, history[:2], grep) == []


def test_a_path_named_by_its_slash_alone_is_a_quote() -> None:
    """A word with a slash inside names something exact (a path), as one with a digit, an
    underscore or a dot does."""
    history = [
        UserItem("Where is it?", event_index=0),
        AssistantItem((_call("c1", "list_files", dir="."),), event_index=1),
        ToolResultItem("c1", "list_files", "lib/helpers\nREADME", event_index=2),
    ]
    ls = _call("c2", "bash", command="ls lib/helpers")
    assert [(a.kind, a.excerpt) for a in _check(history, history[:2], ls)] == [
        ("hidden-quote", "lib/helpers")
    ]


def test_a_quoted_phrase_is_measured_without_the_spaces_around_it() -> None:
    """`" Save now "` is the 8-character phrase `Save now`: under the 10-character threshold."""
    history = [
        UserItem("Where is it?", event_index=0),
        AssistantItem((_call("c1", "read_file", path="a.ts"),), event_index=1),
        ToolResultItem("c1", "read_file", "// Save now button\nexport {}", event_index=2,
                       arguments={"path": "a.ts"}),
    ]
    grep = _call("c2", "bash", command='grep -n " Save now " a.ts')
    assert _check(history, history[:2], grep) == []
    assert _blind._phrases(['grep -n " Save draft " a.ts']) == ["Save draft"]


def test_a_mention_lists_each_hidden_name_once_in_order() -> None:
    history = _conf_read("a = ZEBRA_QUUX_4417\nb = YAK_SHAVE_9921")
    assert _named(history, "Rotating YAK_SHAVE_9921, then ZEBRA_QUUX_4417 too") == [
        (HIDDEN_MENTION, "YAK_SHAVE_9921, ZEBRA_QUUX_4417")
    ]


@pytest.mark.parametrize("line", ["root = 'C:\\work\\tmp_dir'", "name\tvalue_total = 1"],
                         ids=["backslash", "tab"])
def test_a_line_json_escapes_is_shown_in_the_agent_s_write(line: str) -> None:
    """A backslash or a tab is escaped in the call's rendered JSON, as a quote is: the agent's
    own earlier write still shows the line."""
    content = f"{line}\nother = 2\n"
    history = [
        UserItem("Set the root.", event_index=0),
        AssistantItem((_call("c1", "write", path="conf.py", content=content),), event_index=1),
        ToolResultItem("c1", "write", "ok", event_index=2),
        AssistantItem((_call("c3", "read_file", path="conf.py"),), event_index=3),
        ToolResultItem("c3", "read_file", content, event_index=4, arguments={"path": "conf.py"}),
    ]
    edit = _call("c2", "edit", path="conf.py", oldText=line, newText="root = 1")
    assert _check(history, history, edit) == []
    view = [*history[:4], truncate_chars(history[4], 5)]  # the read cut, the write shown
    assert _check(history, view, edit) == []


def test_a_write_tool_whose_content_is_no_text_is_quote_checked() -> None:
    """A content that is no string (a list) is no whole content: the call changes no file the
    checker can diff, and its arguments are checked for quotes as any call's."""
    history = _raised()
    note = _call("c2", "write_file", path="notes.md",
                 content=["InvalidTokenSignature comes from auth"])
    assert [a.kind for a in _check(history, history[:2], note)] == ["hidden-quote"]


def test_a_write_tool_that_names_a_path_alone_is_quote_checked() -> None:
    """A path with neither old text, patch nor content changes nothing the checker can see:
    the call is checked for quotes, and its path came only from a hidden listing."""
    history = [
        UserItem("Back up the settings.", event_index=0),
        AssistantItem((_call("c1", "list_files", dir="config"),), event_index=1),
        ToolResultItem("c1", "list_files", "config/settings_prod.yaml\n", event_index=2),
    ]
    backup = _call("c2", "create_backup", path="config/settings_prod.yaml")
    assert [(a.kind, a.path, a.excerpt) for a in _check(history, history[:2], backup)] == [
        ("hidden-quote", "config/settings_prod.yaml", "config/settings_prod.yaml")
    ]


def test_a_call_of_another_tool_with_a_path_and_a_text_is_no_content_of_the_file() -> None:
    """Only a write tool's content is the file's: a search naming the file and some text
    leaves the last whole read as the file's content."""
    history = _history()
    search = _call("c3", "search_file", path="src/calc.py", text="tax_rate")
    history += [
        AssistantItem((search,), event_index=3),
        ToolResultItem("c3", "search_file", "1 match", event_index=4, arguments=search.arguments),
    ]
    view = [*history[:2], truncate_chars(history[2], 500), *history[3:]]
    actions = _check(history, view, _write_of_target())
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert actions[0].excerpt.splitlines() == ["def price_with_tax(price, qty):", TARGET.strip()]


def test_an_edit_by_old_text_leaves_the_last_read_as_the_file_s_content() -> None:
    """An edit names no whole content: a whole-file write after it is diffed against the
    last read (the last full content the history shows)."""
    history = _history()
    edit = _call("c3", "edit_file", path="src/calc.py", old_string="    return x + 1",
                 new_string="    return x + 1  # one")
    history += [
        AssistantItem((edit,), event_index=3),
        ToolResultItem("c3", "edit_file", "ok", event_index=4, arguments=edit.arguments),
    ]
    view = [*history[:2], truncate_chars(history[2], 500), *history[3:]]
    actions = _check(history, view, _write_of_target())
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert TARGET.strip() in actions[0].excerpt.splitlines()


def test_a_read_with_fewer_than_half_of_its_lines_numbered_is_taken_as_it_is() -> None:
    """One numbered line of three (the last one unterminated) is fewer than half."""
    one_of_three = "     1→alpha\nbeta\ngamma"
    assert _blind._file_text(one_of_three) == one_of_three


def test_answers_about_one_history_do_not_serve_another_of_the_same_length() -> None:
    """Answers are shared by the history's fingerprint (its texts), not by its length alone:
    a log that never showed a name does not flag it because another log of as many texts
    did."""
    forget_shared_answers()
    grep = _call("c2", "grep", pattern="InvalidTokenSignature")
    showed = _raised()
    assert [a.kind for a in _check(showed, showed[:2], grep)] == ["hidden-quote"]
    never = [*showed[:2], ToolResultItem("c1", "run_tests", "all tests passed", event_index=2)]
    assert _check(never, never[:2], grep) == []


def test_a_history_that_shrank_is_indexed_again() -> None:
    """A history changed other than by growing at the end is indexed again from scratch:
    what only its removed items held is no longer in it."""
    forget_shared_answers()
    history = _blind._History()
    start = UserItem("Go.", event_index=0)
    history.sync([start, UserItem("gamma_delta_token", event_index=1)])
    assert history.holds("gamma_delta_token")
    history.sync([start])
    assert not history.holds("gamma_delta_token") and history.holds("Go.")


def test_a_grown_history_whose_last_item_changed_is_indexed_again() -> None:
    """`grown` spares the comparison of the first items, not of the last one indexed."""
    forget_shared_answers()
    history = _blind._History()
    start = UserItem("Go.", event_index=0)
    history.sync([start, UserItem("alpha_beta_old", event_index=1)], grown=True)
    history.sync([start, UserItem("alpha_beta_new", event_index=1)], grown=True)
    assert history.holds("alpha_beta_new") and not history.holds("alpha_beta_old")


def test_the_agent_s_last_message_shows_a_name_the_view_keeps() -> None:
    """The view keeps the agent's last message, which named the key: naming it again is no
    mention of hidden text, though an earlier message of the agent was dropped."""
    forget_shared_answers()
    history = [
        UserItem("Rotate the key.", event_index=0),
        AssistantItem((Block("text", "Looking."),), event_index=1),
        AssistantItem((Block("text", "The key is ZEBRA_QUUX_4417."),), event_index=2),
    ]
    said = AssistantItem((Block("text", "Rotating ZEBRA_QUUX_4417 now."),))
    assert EvidenceChecker().check(history, [history[0], history[2]], said, 3, "r3") == []
    assert [a.kind for a in EvidenceChecker().check(history, history[:2], said, 3, "r3")] == [
        HIDDEN_MENTION
    ]


def test_a_name_the_previous_view_showed_is_hidden_once_its_result_is_cut() -> None:
    """One checker across requests: the result that showed a name at one request is cut at
    the next (the same position, another object): the name is hidden there."""
    forget_shared_answers()
    history = [*_raised(), UserItem("Again.", event_index=3)]
    checker = EvidenceChecker()
    grep = AssistantItem((_call("c2", "grep", pattern="InvalidTokenSignature"),))
    assert checker.check(history, history[:3], grep, 1, "r1", grown=True) == []
    cut = [*history[:2], truncate_chars(history[2], 5), history[3]]
    found = checker.check(history, cut, grep, 2, "r2", grown=True)
    assert [(a.kind, a.excerpt) for a in found] == [("hidden-quote", "InvalidTokenSignature")]


_MODULE = [f"line {i} of the module" for i in range(1, 41)]


def _module_write(changed: dict[int, str], call_id: str = "c2") -> Block:
    lines = [changed.get(i, line) for i, line in enumerate(_MODULE, 1)]
    return _call(call_id, "write_file", path="m.py", content="\n".join(lines) + "\n")


def _module_read():
    return [
        UserItem("Change the module.", event_index=0),
        AssistantItem((_call("c1", "read_file", path="m.py"),), event_index=1),
        ToolResultItem("c1", "read_file", "\n".join(_MODULE) + "\n", event_index=2,
                       arguments={"path": "m.py"}),
    ]


def test_a_line_around_two_changes_is_listed_once() -> None:
    """Lines 20 and 22 changed: the old lines changed with one line of context on each side,
    line 21 (the context of both) once."""
    history = _module_read()
    write = _module_write({20: "line twenty", 22: "line twenty-two"})
    (edit,) = _check(history, history[:2], write)
    assert edit.excerpt.splitlines() == [f"line {i} of the module" for i in range(19, 24)]


def test_each_whole_file_write_is_diffed_on_its_own() -> None:
    """Two writes of the same file from the same content: each one's changed lines are its
    own (what is remembered of a diff is keyed by both texts)."""
    forget_shared_answers()
    history = _module_read()
    (first,) = _check(history, history[:2], _module_write({20: "line twenty"}))
    (second,) = _check(history, history[:2], _module_write({30: "line thirty"}, "c3"))
    assert first.excerpt.splitlines() == [f"line {i} of the module" for i in (19, 20, 21)]
    assert second.excerpt.splitlines() == [f"line {i} of the module" for i in (29, 30, 31)]


def test_forgetting_shared_answers_forgets_the_lines_each_write_changed() -> None:
    forget_shared_answers()
    history = _module_read()
    assert _check(history, history[:2], _module_write({20: "line twenty"}))
    assert _blind._CHANGES
    forget_shared_answers()
    assert not _blind._CHANGES and _blind._changes_chars == 0


def test_a_view_without_the_agent_s_messages_hides_a_name_once_its_result_is_cut() -> None:
    """As above, with views that keep none of the agent's messages (searched whole): the text
    of the result the previous view showed is no longer the view's."""
    forget_shared_answers()
    history = [*_raised(), UserItem("Again.", event_index=3)]
    checker = EvidenceChecker()
    grep = AssistantItem((_call("c2", "grep", pattern="InvalidTokenSignature"),))
    shown = [history[0], history[2], history[3]]
    assert checker.check(history, shown, grep, 1, "r1", grown=True) == []
    cut = [history[0], truncate_chars(history[2], 5), history[3]]
    found = checker.check(history, cut, grep, 2, "r2", grown=True)
    assert [(a.kind, a.excerpt) for a in found] == [("hidden-quote", "InvalidTokenSignature")]


def test_a_history_whose_earlier_item_changed_in_place_is_indexed_again() -> None:
    """Not `grown`: the history is compared item by item, and an earlier message replaced in
    place no longer holds what it said."""
    forget_shared_answers()
    line = "retry_budget = compute_budget(attempts)"
    result = ToolResultItem("c1", "run_tests", "2 failed", event_index=2)
    history = [UserItem("Go.", event_index=0),
               AssistantItem((Block("text", text=f"I will set {line}"),), event_index=1), result]
    checker = EvidenceChecker()
    edit = AssistantItem((_call("c9", "edit_file", path="a.py", old_string=line,
                                new_string="x"),))
    view = [history[0], result]
    assert [a.kind for a in checker.check(history, view, edit, 1, "r1")] == [
        "hidden-edit-target"
    ]
    history[1] = AssistantItem((Block("text", text="something else"),), event_index=1)
    assert checker.check(history, view, edit, 2, "r2") == []


@pytest.mark.parametrize(
    ("said", "named"),
    [
        ("Rotated ZEBRA_QUUX_4417.", "ZEBRA_QUUX_4417"),  # a name ends the sentence
        ("Then I fixed src/api.js. Done", "src/api.js"),
        ("Rotated ZEBRA_QUUX_4417; done", "ZEBRA_QUUX_4417"),
    ],
)
def test_a_name_that_ends_a_sentence_is_found_without_the_full_stop(said, named) -> None:
    """The full stop after a name closes the sentence; it is not part of the name the hidden
    text held (`ZEBRA_QUUX_4417  # …`, not `ZEBRA_QUUX_4417.`)."""
    history = _conf_read("key = ZEBRA_QUUX_4417  # in src/api.js too")
    assert _named(history, said) == [(HIDDEN_MENTION, named)]
    commit = _call("c2", "bash", command=f"git commit -m 'Rotate {named}.'")
    assert [(a.kind, a.excerpt) for a in _check(history, history[:2], commit)] == [
        ("hidden-quote", named)
    ]


def test_a_path_ending_in_two_dots_keeps_them() -> None:
    assert list(_blind._quotables("cd ../build/.. then src/api.js.")) == [
        "../build/..", "src/api.js"
    ]


def test_a_read_ending_in_a_newline_has_no_extra_line() -> None:
    """The newline after the last line ends it: two numbered lines of four are half of them."""
    half = "     1→alpha\n     2→beta\ngamma\ndelta\n"
    assert _blind._file_text(half) == "alpha\nbeta\ngamma\ndelta\n"
    assert _blind._file_text("     1→alpha\nbeta\ngamma\n") == "     1→alpha\nbeta\ngamma\n"


def test_quoted_strings_pair_left_to_right() -> None:
    """A quoted word closes its own quotes: the unquoted text up to the next quoted string is no
    phrase (`' -print -exec sed -n '`), and a phrase may hold the other kind of quote."""
    command = "find . -name 'trial-meta.json' -print -exec sed -n '1,5p' {} \\;"
    assert _blind._phrases([command]) == []
    assert _blind._phrases(['grep -rn "agent_message" x | head -1); printf "%s" "$f"']) == []
    assert _blind._phrases(['git commit -m "don\'t drop the cache"']) == ["don't drop the cache"]
    assert _blind._phrases(["""echo it's "the unbalanced one" """]) == ["the unbalanced one"]


def test_every_known_name_is_one_the_check_would_count_and_says_where_it_comes_from() -> None:
    """pricing/known_names.json lists only names the check would otherwise count (an entry
    without `_`, a digit, a dot, a slash or an inner capital never changes a flag), each group
    with its source, and only bare names: a path with a directory is this project's."""
    from replay._data import load_json

    data = load_json("known_names.json")
    groups = [*data["clients"], *data["names"]]
    for group in groups:
        assert group["source"].strip(), group
        for name in group["names"]:
            assert _blind._DISTINCTIVE.search(name) is not None, name
            assert "/" not in name.rstrip("/"), name


def test_a_code_too_short_to_quote_ending_a_sentence_is_no_mention() -> None:
    """`E4021.` ends a sentence: without its full stop the name is five characters, under the
    six a quotable piece needs (`_QUOTABLE`), so it is no mention, as `E4021` alone is not."""
    assert _quoted("FAILED export: error E4021 (E4021x)", said="It fails with E4021.") == []
    assert _quoted("FAILED export: error E40213", said="It fails with E40213.") == ["E40213"]


def test_a_dot_counts_only_inside_a_name() -> None:
    """In prose, a dot makes a piece name something exact only inside it (`_DISTINCTIVE`:
    `src/api.js`, `config.yaml`), as a digit or a slash does anywhere: a leading dot alone
    (`.prettierrc`, `.gitignore`) is a word of every project."""
    output = "wrote .prettierrc and settings.yaml"
    assert _quoted(output, said="Done: .prettierrc updated.") == []
    assert _quoted(output, said="Done: settings.yaml updated.") == ["settings.yaml"]


def test_an_absolute_path_whose_relative_form_is_too_short_to_search_stays_hidden() -> None:
    """The relative form of an absolute path counts as shown only when it is a quotable piece
    itself: `a.js` is found inside any `data.js`, so `/work/app/a.js` that only a hidden result
    held is hidden although the view shows `data.js`."""
    path = "/work/app/a.js"
    history = [
        UserItem("Fix the loader.", event_index=0),
        AssistantItem((_call("c1", "grep", pattern="load"),), event_index=1),
        ToolResultItem("c1", "grep", f"{path}:3:load()", event_index=2),
        AssistantItem((_call("c2", "list_files", path="."),), event_index=3),
        ToolResultItem("c2", "list_files", "data.js\nmain.py", event_index=4),
    ]
    read = _call("c3", "read_file", path=path)
    found = EvidenceChecker().check(history, [history[0], *history[3:]], AssistantItem((read,)),
                                    5, "r", cwd="/work/app")
    assert [(a.kind, a.excerpt) for a in found] == [("hidden-quote", path)]


def test_a_site_s_url_with_a_final_slash_is_still_a_bare_site() -> None:
    """`https://github.com/` has no path either (the piece is `//github.com/`): known, in a
    command or in prose, like `https://github.com`; a page under it still counts."""
    assert _blind.general_knowledge("//github.com/")
    output = "remote: https://github.com/ (pushed)"
    assert _quoted(output, _call("c2", "bash", command="curl -sI https://github.com/"),
                   said="Checked https://github.com/ first") == []


def test_a_name_in_a_later_text_of_a_response_is_a_mention() -> None:
    """Every text block of the response is its own text: a name only the second one holds
    is counted."""
    history = _conf_read("key = ZEBRA_QUUX_4417 old = KIWI_7")
    assert _named(history, "Looking at the config now", "Rotating ZEBRA_QUUX_4417 now") == [
        (HIDDEN_MENTION, "ZEBRA_QUUX_4417")
    ]


def test_each_edit_of_a_multiedit_is_checked() -> None:
    """A MultiEdit needs the old text of each of its edits: one whose *second* edit changes a
    line the cut read hid is flagged, with that line (the first edit's line was shown)."""
    call = _call("c2", "MultiEdit", file_path="src/calc.py", edits=[
        {"old_string": "def helper_0(x):", "new_string": "def helper_zero(x):"},
        {"old_string": TARGET, "new_string": "x"},
    ])
    actions = _check_cut_read(call)
    assert [(a.kind, a.path) for a in actions] == [
        ("hidden-edit-target", "src/calc.py"),
        ("stubbed-read", "src/calc.py"),
    ]
    assert actions[0].excerpt == TARGET.strip()


@pytest.mark.parametrize("domain", ["com", "org", "net", "io", "dev"])
def test_a_bare_site_under_each_generic_domain_is_known(domain: str) -> None:
    """Each generic top-level domain the rule takes (`_known._BARE_SITE`) makes a bare site,
    with or without the `//` a URL leaves: no evidence in a command or in prose."""
    site = f"acme-widgets.{domain}"
    assert _blind.general_knowledge(site) and _blind.general_knowledge(f"//{site}")
    output = f"deployed to https://{site} and {site}"
    assert _quoted(output, _call("c2", "bash", command=f"curl -sI https://{site}"),
                   said=f"Checked {site} first") == []


def test_a_phrase_whose_words_a_tab_separates_is_a_phrase() -> None:
    """A tab separates words as a space does (a column header of a tab-separated output)."""
    assert _blind._phrases(['grep -n "Invoice\tamount" out.tsv']) == ["Invoice\tamount"]


def test_a_word_in_capitals_is_no_name() -> None:
    """A capital names something exact only after a small letter (`parseTodoId`): a word in
    capitals (`WARNING`, `DELETE`) recurs in any output, as a plain word does."""
    output = "WARNING: DELETE skipped by parseTodoId"
    said = "The WARNING says DELETE was skipped by parseTodoId"
    assert _quoted(output, said=said) == ["parseTodoId"]


def test_an_absolute_path_whose_relative_form_the_system_prompt_names_is_shown() -> None:
    """What every request sends (the system prompt) shows a path's relative form as the view
    would: the absolute path under the working directory is then shown too."""
    path = "/work/app/src/billing_rules.py"
    history = [
        UserItem("Fix the billing rules.", event_index=0),
        AssistantItem((_call("c1", "grep", pattern="RATE"),), event_index=1),
        ToolResultItem("c1", "grep", f"{path}:3:RATE = 2", event_index=2),
    ]
    read = AssistantItem((_call("c2", "read_file", path=path),))

    def flags(head: str) -> list[tuple[str, str]]:
        found = EvidenceChecker().check(history, history[:2], read, 3, "r", head=head,
                                        cwd="/work/app")
        return [(a.kind, a.excerpt) for a in found]

    assert flags("The rules live in src/billing_rules.py.") == []
    assert flags("You are a coding agent.") == [("hidden-quote", path)]


def test_the_rows_carry_the_documented_kinds(run42_doc) -> None:
    """The kinds the README and the module name are the labels the rows carry."""
    kinds = {row["kind"] for row in run42_doc["evidence"]}
    assert kinds == {"hidden-edit-target", "stubbed-read", "hidden-mention"}


def test_a_long_file_s_change_is_its_lines_and_one_neighbour_each_side() -> None:
    """However long the file, a whole-file write needs the lines it changed and one line of
    context on each side: a line that recurs through a file of over 200 lines (`}`) is no
    junk to skip (difflib's `autojunk` took this one-line change for 121 lines)."""
    old = [f"case_{i % 7}:" if i % 2 == 0 else "}" for i in range(240)]
    new = [*old[:120], "case_changed:", *old[121:]]
    assert _blind._change_context("\n".join(old), "\n".join(new)) == ("}", old[120])


def test_a_name_of_digits_joined_by_an_underscore_is_quotable() -> None:
    """A piece starts where an identifier may, at a letter or an underscore: a migration's
    stamp (`20240115_093000`) names something exact as a path does."""
    output = "applied 20240115_093000 and 20240116_101500"
    grep = _call("c2", "bash", command="ls migrations | grep 20240115_093000")
    assert _quoted(output, grep) == ["20240115_093000"]


def test_a_patch_that_adds_a_file_is_a_write_of_a_new_file() -> None:
    """An `apply_patch` that only adds a file is checked as a whole-file write of a file
    never seen is: it needs no old text, so nothing it writes is a hidden quote."""
    output = "raised InvalidTokenSignature in auth"
    added = "*** Begin Patch\n*** Add File: src/auth_errors.py\n" + (
        "+class InvalidTokenSignature(Exception):\n+    pass\n*** End Patch")
    write = _call("c2", "write_file", path="src/auth_errors.py",
                  content="class InvalidTokenSignature(Exception):\n    pass\n")
    assert _quoted(output, _call("c2", "apply_patch", input=added)) == []
    assert _quoted(output, write) == []


def test_a_single_dash_flag_is_no_quote() -> None:
    """A flag is no quote whether one dash or two start it (`-Xmx512m`, `-Dapp.mode`)."""
    output = "started with -Xmx512m -Dapp.mode=prod"
    java = _call("c2", "bash", command="java -Xmx512m -Dapp.mode=prod -jar app.jar")
    assert _quoted(output, java) == []


def test_a_path_that_only_starts_like_the_device_folder_is_a_quote() -> None:
    """`/dev/` is the system's device folder; `/devtools/…` is a path like any other."""
    output = "installed under /devtools/bin_x64 (not /dev/null)"
    ls = _call("c2", "bash", command="ls /devtools/bin_x64 2>/dev/null")
    assert _quoted(output, ls) == ["/devtools/bin_x64"]


def test_an_edit_whose_file_no_key_names_is_still_checked() -> None:
    """An edit's old text is needed whatever names the file: one that only hidden text held is
    a hidden edit target, with no path to show."""
    history = _history()
    edit = _call("c2", "edit_file", target="src/calc.py", old_string=TARGET, new_string="x")
    actions = _check(history, history[:2], edit)
    assert [(a.kind, a.path, a.excerpt) for a in actions] == [
        ("hidden-edit-target", None, TARGET.strip())
    ]


def test_a_result_belongs_to_the_latest_call_of_its_id() -> None:
    """A log may reuse a call id: a result answers the latest call of that id, so it is the
    content of the file that call read, not of the file an earlier call of the id named."""
    history = [
        UserItem("The tax is wrong.", event_index=0),
        AssistantItem((_call("c1", "read_file", path="src/other.py"),), event_index=1),
        ToolResultItem("c1", "read_file", "x = 1\n", event_index=2,
                       arguments={"path": "src/other.py"}),
        AssistantItem((_call("c1", "read_file", path="src/calc.py"),), event_index=3),
        ToolResultItem("c1", "read_file", CALC, event_index=4, arguments={"path": "src/calc.py"}),
    ]
    actions = _check(history, history[:4], _write_of_target())
    assert [(a.kind, a.path) for a in actions] == [("hidden-edit-target", "src/calc.py")]


def _deleting(*paths: str, update: str = "") -> Block:
    files = "".join(f"*** Delete File: {p}\n" for p in paths)
    return _call("c2", "apply_patch", input=f"*** Begin Patch\n{update}{files}*** End Patch")


@pytest.mark.parametrize("delete", [
    _call("c2", "bash", command="rm src/legacy_parser.py"),
    _deleting("src/legacy_parser.py"),
], ids=["rm", "patch"])
def test_a_patch_that_deletes_a_file_uses_its_name_as_rm_does(delete: Block) -> None:
    """Deleting a file relies on nothing but its name: a patch's `*** Delete File:` named a
    file only a hidden listing held, as `rm` does, and was never flagged."""
    listing = "src/legacy_parser.py\nsrc/parser.py\n"
    found = EvidenceChecker().check(*_listed(listing), AssistantItem((delete,)), 3, "r")
    assert [(a.kind, a.excerpt) for a in found] == [("hidden-quote", "src/legacy_parser.py")]
    history, _ = _listed(listing)
    assert EvidenceChecker().check(history, list(history), AssistantItem((delete,)), 3, "r") == []


def _listed(listing: str) -> tuple[list, list]:
    """A history whose one result is `listing`, and a view that dropped that result."""
    history = [
        UserItem("Remove the old parser.", event_index=0),
        AssistantItem((_call("c1", "bash", command="ls src"),), event_index=1),
        ToolResultItem("c1", "bash", listing, event_index=2),
    ]
    return history, history[:2]


def test_a_patch_s_deleted_files_are_checked_beside_its_edit_once_per_call() -> None:
    """A patch that updates one file and deletes another: a deleted file only hidden text
    named is a hidden quote where the edit's old text was shown; where that is hidden too,
    the call is one action (its hidden edit target), not two."""
    update = f"*** Update File: src/calc.py\n@@\n-{TARGET}\n+    return 0\n"
    history = [*_history(), ToolResultItem("c9", "bash", "src/legacy_parser.py\n", event_index=3)]
    patch = _deleting("src/legacy_parser.py", update=update)
    shown_edit = _check(history, history[:3], patch)
    assert [(a.kind, a.path, a.excerpt) for a in shown_edit] == [
        ("hidden-quote", "src/legacy_parser.py", "src/legacy_parser.py")
    ]
    hidden_edit = _check(history, history[:1], patch)
    assert [a.kind for a in hidden_edit] == ["hidden-edit-target"]
    # A known name (`README.md`) is no evidence, in a patch as in a command.
    assert _check(history, history[:3], _deleting("README.md", update=update)) == []


def test_an_empty_list_of_edits_without_a_content_is_quote_checked() -> None:
    """`edits: []` with no content changes nothing the checker can see, as a write tool that
    names a path alone: its path, only a hidden listing held, is a hidden quote."""
    history, view = _listed("config/settings_prod.yaml\n")
    empty = _call("c2", "MultiEdit", file_path="config/settings_prod.yaml", edits=[])
    found = EvidenceChecker().check(history, view, AssistantItem((empty,)), 3, "r")
    assert [(a.kind, a.path) for a in found] == [("hidden-quote", "config/settings_prod.yaml")]


@pytest.mark.parametrize("first", [2, 5])
def test_a_table_numbered_from_past_1_by_consecutive_rows_is_read_as_it_is(first: int) -> None:
    """A whole file's numbered read counts from line 1 (a read of a range is never taken for
    the file's content): a table whose first column counts on from 5 is the file's own text."""
    table = "".join(f"{n}\tname_{n}\n" for n in range(first, first + 30))
    assert _blind._file_text(table) == table
    numbered = "".join(f"{k}\t{row}\n" for k, row in enumerate(table.splitlines(), 1))
    assert _blind._file_text(numbered) == table


def test_thinking_shows_a_name_while_kept_and_is_not_checked_for_mentions() -> None:
    """The rule the README states: earlier thinking the view keeps is a source of the names it
    holds (whatever the provider strips), and a response's own thinking is no mention."""
    history = [*_raised(), AssistantItem(
        (Block("thinking", "InvalidTokenSignature comes from auth"),), event_index=3)]
    grep = _call("c2", "grep", pattern="InvalidTokenSignature")
    assert _check(history, [*history[:2], history[3]], grep) == []
    assert [a.kind for a in _check(history, history[:2], grep)] == ["hidden-quote"]
    thought = AssistantItem((Block("thinking", "so InvalidTokenSignature is raised"),
                             Block("text", "Looking again.")))
    assert EvidenceChecker().check(history, history[:2], thought, 4, "r") == []


def _arrow_numbered(text: str, first: int = 1) -> str:
    """`text` as Claude Code's Read shows it from line `first` on (`     16→line`)."""
    return "".join(f"{k:>6}→{line}\n" for k, line in enumerate(text.splitlines(), first))


_PART = "\n".join(CALC.splitlines()[15:25]) + "\n"
"""Lines 16 to 25 of `CALC`, helpers only (the line the tests change is further down)."""


def test_a_read_numbered_with_arrows_from_past_1_is_not_the_file_s_content() -> None:
    """A Claude Code read numbered from line 16 read a range (its call's arguments said so or
    not): like a tab-numbered read (390265b), only one counting from 1 is the file's content
    (None: no content)."""
    assert _blind._file_text(_arrow_numbered(CALC)) == CALC
    assert _blind._file_text(_arrow_numbered(_PART, 16)) is None
    assert _blind._file_text(_arrow_numbered(_PART, 2)) is None
    assert _blind._file_text(_arrow_numbered(_PART) + "    12→more\n") is None  # not in a row
    assert _blind._file_text(_arrow_numbered(_PART)) == _PART
    few = "    16→alpha\nbeta\ngamma\ndelta"  # fewer than half numbered: no numbered read
    assert _blind._file_text(few) == few


def test_a_write_is_diffed_against_the_whole_read_before_a_range_read_without_arguments():
    """The file's last known content stays the whole read before a range's read (numbered
    from 16, its call naming no range): a whole-file write's changed lines are found against
    it (against the range's lines, all unchanged, the change was hidden)."""
    part = _PART
    history = [
        *_history(_arrow_numbered(CALC)),
        AssistantItem((_call("c3", "read_file", path="src/calc.py"),), event_index=3),
        ToolResultItem("c3", "read_file", _arrow_numbered(part, 16), event_index=4,
                       arguments={"path": "src/calc.py"}),
    ]
    view = [*history[:2], truncate_chars(history[2], 500), *history[3:]]
    actions = _check(history, view, _write_of_target())
    assert [a.kind for a in actions] == ["hidden-edit-target", "stubbed-read"]
    assert actions[0].excerpt.splitlines() == ["def price_with_tax(price, qty):", TARGET.strip()]
    assert actions == _reference_check(history, view, AssistantItem((_write_of_target(),)), 3,
                                       "req-4")
