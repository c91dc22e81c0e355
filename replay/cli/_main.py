"""The `replay` command line. It only parses flags and calls the library's verbs."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

from replay._data import data_dir
from replay._errors import ReplayError, shown_path
from replay._printable import printable

FORMATS = ("table", "json", "csv", "parquet")


_GROUP_OPTIONS = ("--help", "-h", "--version")
"""The options of `replay` itself; any other option first is one of `run`'s."""


class _OneLogCommand(click.Command):
    """A command that reads one LOG. A word left over after it is refused as click does, but
    where it is clearly another log (a shell glob that matched several files) or a strategy
    given without `-s`, the error says what to run instead."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not any(p.name == "log" for p in self.params):
            return super().parse_args(ctx, args)
        ctx.allow_extra_args = True  # the leftovers come back in ctx.args, refused below
        rest = super().parse_args(ctx, args)
        if ctx.args and not ctx.resilient_parsing:
            _refuse_extra_arguments(ctx, ctx.args)
        return rest


def _refuse_extra_arguments(ctx: click.Context, extra: list[str]) -> NoReturn:
    from replay.strategies import parse_name

    if all(word != "-" and Path(word).is_file() for word in extra):
        instead = ("`replay batch` replays several (the same paths, a folder, or a quoted glob)"
                   if ctx.info_name == "run" else "give it one at a time")
        _one_line_exit(
            f"`{ctx.command_path}` reads one log, and was given {len(extra) + 1} (a shell glob "
            f"names every file it matches): {instead}", ctx)
    if len(extra) == 1:
        try:
            parse_name(extra[0])
        except ReplayError:  # not a strategy's name: click's message below
            pass
        else:
            _one_line_exit(
                f"unexpected argument {extra[0]!r} after the log: strategies are named with "
                f"-s (`{ctx.command_path} LOG -s {extra[0]}`)", ctx)
    ctx.fail(f"Got unexpected extra argument{'s' if len(extra) > 1 else ''} "
             f"({' '.join(extra)})")


class _DefaultToRun(click.Group):
    """`replay LOG ...` is shorthand for `replay run LOG ...` (`replay - ...` too: standard
    input)."""

    command_class = _OneLogCommand

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with reported_errors():  # Ctrl-C or a full disk while parsing, or printing --help
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with reported_errors():  # the subcommand: its own parsing, and what it runs
            return super().invoke(ctx)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "-":
            args = ["run", *args]
        elif args and args[0].startswith("-") and args[0] not in _GROUP_OPTIONS:
            args = ["run", *args]  # `replay -s baseline LOG`: run's options before its LOG
        elif args and args[0] not in self.commands and not args[0].startswith("-"):
            self._refuse_mistyped_command(args[0])
            args = ["run", *args]
        return super().parse_args(ctx, args)

    def _refuse_mistyped_command(self, word: str) -> None:
        """A missing "log" that is a near-miss of a command name (`stratgies`) is a typo of
        the command, not a path: say so instead of "no such file"; any other bare word may be
        either. Words that look like paths (a `/` or a `.`) are left to `run`, which names the
        missing file."""
        import difflib

        if "/" in word or "." in word or Path(word).exists():
            return
        close = difflib.get_close_matches(word, sorted(self.commands), n=1)
        if close:
            say(f"error: no such file or command {word!r}; did you mean {close[0]!r}?")
        else:
            say(f"error: {word}: no such file, nor a command (`replay --help` lists them)")
        sys.exit(2)


def say(message: str) -> None:
    """`message` on standard error, `printable`: it may quote a file name or the log, whose
    control characters must not reach the terminal as escape sequences."""
    click.echo(printable(message), err=True)


def _one_line_exit(message: str, ctx: click.Context | None) -> NoReturn:
    say(f"error: {message}")
    if ctx is not None:
        ctx.exit(2)
    raise click.exceptions.Exit(2)


_PATH_REASONS = (
    (" does not exist.", "no such file or folder"),
    (" is a directory.", "is a folder, not a file"),
    (" is a file.", "is a file, not a folder"),
    (" is not readable.", "cannot be read (permission denied)"),
    (" is not writable.", "cannot be written (permission denied)"),
)


EMPTY_FILE_NAME = "cannot write '': the file name is empty"
"""The refusal of an empty output file name (`-o "$UNSET"`)."""


class FilePath(click.Path):
    """A click.Path whose refusals are one `error:` line, exit 2, as every other file `replay`
    cannot read or write (click would print its usage lines, meant for a mistyped option)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.checked(value, param, ctx)
        except click.BadParameter as err:
            reason = next((r for end, r in _PATH_REASONS if err.message.endswith(end)), None)
            if reason == "no such file or folder" and not (self.file_okay and self.dir_okay):
                reason = "no such file" if self.file_okay else "no such folder"
            flag = f"{param.opts[0]} " if isinstance(param, click.Option) else ""
            _one_line_exit(f"{flag}{value}: {reason or err.message}", ctx)

    def checked(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert(value, param, ctx)


class _DashPath(FilePath):
    """A LOG argument or an `-o FILE`: a `Path`, or the string `-` for standard input or output.
    `./-` stays a file named `-` (click.Path would make it `Path("-")`, the same as `-`)."""

    def checked(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "-":
            return value
        if value == "":
            # click makes it `.`: `replay "$UNSET"` read the current folder as the log, and
            # `-o "$UNSET"` was refused as `cannot write '.'`, a name nobody gave.
            _one_line_exit("'': an empty name is no file or folder" if self.dir_okay
                           else EMPTY_FILE_NAME, ctx)
        if not self.dir_okay and isinstance(value, str) and value.endswith(("/", os.sep)):
            # Path() drops the slash, and the file would be written as the folder's name.
            _one_line_exit(f"cannot write {value!r}: expected a file name, not a folder", ctx)
        return super().checked(value, param, ctx)


class NoDashPath(FilePath):
    """A path that `-` is not: the option writes a file (or a folder) by name, and `-` would be
    one named `-` in the current folder, where every `OUTPUT_PATH` means standard output.
    (`./-` still names that file.)"""

    def checked(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value == "-":
            self.fail("needs a path: `-` (standard output) is not one here", param, ctx)
        if value == "":
            # click makes it `.`: `batch -o "$UNSET"` wrote its dataset into the current folder.
            _one_line_exit("cannot write '': the folder name is empty" if not self.file_okay
                           else EMPTY_FILE_NAME, ctx)
        return super().checked(value, param, ctx)


LOG_PATH = _DashPath(path_type=Path)
"""The type of every LOG argument."""

OUTPUT_PATH = _DashPath(dir_okay=False, path_type=Path)
"""The type of every `-o FILE` that may be `-` (standard output)."""


def check_output_folder(ctx: click.Context, param: click.Parameter, value: Path | None) -> Any:
    """Refuse an output file whose folder does not exist before any work is done: the write
    itself (`replay._atomic`) would create the folder, as library callers rely on, and the
    command line never creates one silently from a mistyped `-o`."""
    if value is None or value == "-":
        return value
    if value.name in ("", ".", ".."):  # `-o .`, `-o ..` (an empty name is refused as typed)
        say(f"error: cannot write {str(value)!r}: expected a file name")
        ctx.exit(2)
    why = missing_folder(value)
    if why is not None:
        say(f"error: cannot write {value}: {why}")
        ctx.exit(2)
    return value


def missing_folder(value: Path) -> str | None:
    """Why the folder `value` would be written in is not there (None when it is). Through a
    link, that is the folder of the file it points to (a dangling link's folder was created)."""
    if value.is_symlink():
        value = value.resolve()
    if value.parent.is_dir():
        return None
    what = "is not a directory" if value.parent.exists() else "does not exist"
    return f"directory {value.parent} {what}"


def refuse_overwriting_a_log(options: dict[str, Any]) -> None:
    """An output (`-o`, `--write-tokenizers`) naming a file being read — a log, a file of a log
    folder, a cache-rule, plug-in or tokenizer file — or a link to one, would replace the input
    with the result: a user mistake, refused before any work, as is a new file in a log folder
    being read. Inputs are never written."""
    logs = [options.get("log"), *(options.get("logs") or ())]
    # The log `-` is standard input (checked below), not the file named `-` in this folder.
    files = [log for log in logs if not (isinstance(log, str) and log == "-")]
    inputs = [*files, options.get("cache_rules"), *(options.get("strategy_files") or ())]
    tokenizers = os.environ.get("REPLAY_TOKENIZERS") or None
    folders = [Path(log) for log in logs if log is not None and Path(log).is_dir()]
    # `--write-tokenizers` may renew the tokenizer file in force: that is what it writes.
    for flag, output, read in (("-o", options.get("output"), [*inputs, tokenizers]),
                               ("--write-tokenizers", options.get("write_tokenizers"), inputs)):
        if output is None or output == "-":
            continue
        shown = shown_path(output)  # (`-o ./-` is `./-`: `-` alone reads as standard output)
        for source in read:
            if source is not None and _same_file(source, output):
                raise ReplayError(
                    f"{flag} {shown} is a file being read ({shown_path(source)}): "
                    "write the result elsewhere"
                )
        if "-" in logs and _is_standard_input(output):
            raise ReplayError(
                f"{flag} {shown} is the log being read on standard input: write the result "
                "elsewhere"
            )
        target = Path(output)
        # Not `--write-tokenizers` either: its file holds only the measured families, and
        # replacing the built-in `tokenizers.json` with it would drop every other one.
        if target.resolve().is_relative_to(data_dir().resolve()):
            raise ReplayError(
                f"{flag} {shown} is in replay's own data folder ({data_dir()}): write the "
                "result elsewhere"
            )
        # Nor a new file there: the folder is read whole, and `convert DIR -o DIR/new.jsonl`
        # left one of two log formats, which `replay run DIR` then refused.
        if any(target.resolve().is_relative_to(f.resolve()) for f in folders):
            raise ReplayError(
                f"{flag} {shown} is in the log folder being read: write the result elsewhere"
            )
    outputs = [options.get("output"), options.get("write_tokenizers")]
    if None not in outputs and "-" not in outputs and (
        Path(outputs[0]).resolve() == Path(outputs[1]).resolve()
    ):
        raise ReplayError(
            f"-o and --write-tokenizers both name {shown_path(outputs[0])}: one would replace the "
            "other"
        )


def _is_standard_input(output: Any) -> bool:
    """True when `output` is the file behind standard input (`replay - -o LOG < LOG`)."""
    try:
        return os.path.samestat(os.fstat(sys.stdin.fileno()), os.stat(output))
    except (OSError, ValueError, AttributeError):  # no such file yet, or no standard input
        return False


def _same_file(a: Any, b: Any) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, TypeError, ValueError):  # one of them does not exist (yet)
        return False


SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".parquet": "parquet", ".md": "markdown"}
"""The format an `-o` file's suffix names, where `--format` is not given."""
DATA_FORMATS = frozenset({"json", "csv", "parquet"})
"""Formats a program reads back: a file named for one is never given a text table."""


def format_for(fmt: str | None, output: Any, formats: tuple[str, ...]) -> str:
    """`--format`, else the one `-o`'s suffix names (among `formats`), else the first of
    `formats`. A `--format` that another format's suffix contradicts is a mistake: a table
    written to `out.json` would be read as JSON."""
    named = None
    if output is not None and str(output) != "-":
        named = refuse_data_suffix(output, _either(formats), formats)
        named = named if named in formats else None
    fmt = fmt or named or formats[0]
    if named is not None and named != fmt:
        raise ReplayError(
            f"--format {fmt} but -o {output} names a {named} file: drop --format, or give a "
            "file name that agrees with it"
        )
    if fmt == "parquet" and output is None:
        # Refused before the replay, not after it.
        raise ReplayError("--format parquet needs -o FILE (Parquet is not for the terminal)")
    return fmt


def refuse_data_suffix(
    output: Any, writes: str, formats: tuple[str, ...] = (), flag: str = "-o"
) -> str | None:
    """The format `-o`'s suffix names; an error where it names a data format (JSON, CSV,
    Parquet) other than `formats`, what the command writes (`writes`, said in the error): a
    program reading the file as that format would fail on it. `flag`: the option that names
    the file (`--write-log`, `--write-tokenizers` write one too)."""
    if output is None or str(output) == "-":
        return None
    named = SUFFIX_FORMATS.get(Path(str(output)).suffix.lower())
    if named in DATA_FORMATS and named not in formats:
        raise ReplayError(
            f"{flag} {output} names a {named} file, which this command does not write (it writes "
            f"{writes}): give a file name that agrees with {'one' if len(formats) > 1 else 'it'}"
        )
    return named


def _either(words: tuple[str, ...]) -> str:
    """`table`, `table or json`, `table, json or markdown`."""
    return " or ".join(filter(None, (", ".join(words[:-1]), words[-1])))


def output_options(formats: tuple[str, ...] = FORMATS) -> Callable:
    """`--format`, `-o/--output` and `--quiet`, shared by every command that prints results.
    Without `--format`, the format is the one `-o`'s suffix names, else the first of
    `formats`."""

    def decorate(fn: Callable) -> Callable:
        command = fn

        @functools.wraps(command)
        def with_format(*args: Any, **kwargs: Any) -> Any:
            with reported_errors():
                kwargs["fmt"] = format_for(kwargs.get("fmt"), kwargs.get("output"), formats)
            return command(*args, **kwargs)

        fn = with_format
        fn = click.option("--quiet", "-q", is_flag=True, help="Print nothing but the result.")(fn)
        fn = click.option(
            "-o",
            "--output",
            type=OUTPUT_PATH,
            callback=check_output_folder,
            help="Write the result to FILE (atomically) instead of standard output; its folder "
            "must exist.",
        )(fn)
        suffixes = ", ".join(k for k, v in SUFFIX_FORMATS.items() if v in formats)
        fn = click.option(
            "--format",
            "fmt",
            type=click.Choice(formats),
            help=f"Output format [default: {formats[0]}, or the one -o's suffix names: "
            f"{suffixes}].",
        )(fn)
        return fn

    return decorate


ttl_option = click.option(
    "--ttl", type=click.Choice(["5m", "1h"]), help="Force every breakpoint's TTL, where the "
    "client picks one (Anthropic-style caches); ignored, with a note, elsewhere (OpenAI, Gemini)."
)
"""`--ttl`, shared by the commands that simulate a cache (`whatif` words its own help)."""

class _Tokens(click.ParamType):
    """A number of tokens: `200000`, `200_000`, `200k`, `1m`, `1.05m`."""

    name = "tokens"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from replay.strategies._base import _number  # the reader of `--set` values

        number = value if isinstance(value, int) else _number(str(value))
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            self.fail(f"{value!r} is not a whole number of tokens ≥ 1 (e.g. 200000, 200k, 1m)",
                      param, ctx)
        return number


context_window_option = click.option(
    "--context-window",
    type=_Tokens(),
    metavar="TOKENS",
    help="The context window strategies fit prompts into and `over window` counts against, for "
    "every model (e.g. 200k: what the agent's harness was set to, where that is not the "
    "model's own window in pricing/context_windows.json, such as Claude Code on a 1M model).",
)
"""`--context-window`, shared by the commands whose strategies act near the window."""

horizon_option = click.option(
    "--horizon",
    type=click.IntRange(min=1),
    metavar="N",
    help="Follow each rewrite's break-even over at most N requests (default: to the strategy's "
    "next structural rewrite or the end of its thread). Each rewrite replays the rest of the log "
    "without it: on long logs with many rewrites this bounds the time.",
)
"""`--horizon`, shared by the commands that analyse every rewrite's break-even."""


workers_option = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Replay the strategies on N processes (same output, sooner on a long log with many "
    "strategies; each process holds the log: memory grows with N).",
)
"""`--workers`, shared by the commands that replay one log through many strategies."""


def replay_options(fn: Callable) -> Callable:
    """Options that change how requests are simulated (provider, model, client, prices)."""
    for decorator in reversed(
        [
            click.option("--provider", help="Simulate every request on this provider."),
            click.option("--model", help="Simulate every request with this model."),
            click.option(
                "--client",
                help="Client profile: where breakpoints go (default: from the log's agent).",
            ),
            click.option(
                "--cache-rules",
                type=FilePath(exists=True, dir_okay=False, path_type=Path),
                help="Your own cache-rule file for the provider (schema: docs/cache-rules.md).",
            ),
            click.option(
                "--price",
                "prices",
                multiple=True,
                metavar="MODEL=input:IN,output:OUT[,...]",
                help="Price override in USD per million tokens (repeatable, once per model).",
            ),
            click.option("--strict", is_flag=True, help="Fail on the first malformed log line."),
        ]
    ):
        fn = decorator(fn)
    return fn


def price_overrides(prices: tuple[str, ...]) -> dict:
    """`--price MODEL=input:IN,...` values → overrides by model (a bad one is a user error)."""
    from replay.prices import parse_price_overrides

    return parse_price_overrides(prices)


def emit(
    frame: Any, document: dict, fmt: str, output: Path | None, table: Callable[[], Any]
) -> None:
    """Print or write a result: the rich table, the JSON document, or the frame as CSV/Parquet.
    `table` makes the table, only when it is printed (a row per request and strategy: cells
    for every one of them, as many strings again as the frame holds values)."""
    from replay import report

    if fmt == "json":
        report.write_output(report.json_pieces(document), output)
    elif fmt == "csv":
        report.write_output(report.csv_pieces(frame), output)
    elif fmt == "parquet":  # (`format_for` refused it without -o)
        report.write_output(report.to_parquet_bytes(frame), output)
    else:
        report.print_table(table(), output)


_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EBADF})
"""A write that failed for want of room (or to a closed standard output): the environment's
failure, wherever it happened (the files replay writes by name report their name; standard
output has none)."""


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """The one place user and environment errors become one line on stderr and an exit code,
    never a traceback: a `ReplayError` or a path too long for the system (exit 2), Ctrl-C
    (`interrupted`, 130), a loop of symbolic links (exit 2), output that cannot
    be written for want of room (exit 1) and a reader that stopped reading (`| head`: silent,
    exit 1, as click does). Any other exception is a bug in replay: its traceback is the bug
    report."""
    try:
        yield
    except ReplayError as err:
        say(f"error: {err}")
        sys.exit(2)
    except Terminated:
        say("terminated")
        sys.exit(128 + signal.SIGTERM)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
    except RuntimeError as err:
        if not str(err).startswith("Symlink loop"):
            raise
        # `Path.resolve()` of a path the user gave that loops (Python 3.11; later versions
        # raise OSError ELOOP, reported below as the file system's error).
        say(f"error: {err}: a loop of symbolic links")
        sys.exit(2)
    except OSError as err:
        if err.errno == errno.EPIPE:
            _drop_stdout()
            sys.exit(1)
        if err.errno == errno.ENAMETOOLONG:  # a path the user typed: no file can have it
            name = "a path" if err.filename is None else os.fsdecode(err.filename)
            shown = name if len(name) <= 80 else f"{name[:60]}…{name[-10:]}"
            say(f"error: {shown}: file name too long ({len(name):,} characters)")
            sys.exit(2)
        if err.errno not in _FULL or err.filename is not None:
            raise
        _drop_stdout()
        say(f"error: cannot write output: {err.strerror}")
        sys.exit(1)


def _drop_stdout() -> None:
    """Point standard output at the null device if what it holds cannot be written, so that
    exiting does not fail on it a second time (an "Exception ignored" message)."""
    try:
        sys.stdout.flush()
    except OSError:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # (a stream with no fd)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, sys.stdout.fileno())
            os.close(null)


def user_errors(fn: Callable) -> Callable:
    """A command whose user mistakes and environment failures are reported in one line
    (`reported_errors`); its output is flushed before it ends, so a write that fails does so
    here and not as the interpreter exits."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with reported_errors():
            refuse_overwriting_a_log(kwargs)
            result = fn(*args, **kwargs)
            sys.stdout.flush()
            return result

    return wrapper


@click.group(cls=_DefaultToRun, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="replay")
def cli() -> None:
    """Replay coding-agent logs through context strategies and price each one.

    A LOG may also be a pipe (`<(zcat run.jsonl.gz)`) or `-` for standard input: it is read
    once, through a temporary copy.

    \b
    Example:
      replay logs/run42.jsonl --strategies all
      replay run logs/run42.jsonl --strategies baseline,truncate-500 --per-turn
      zcat run.jsonl.gz | replay - -s baseline,truncate-500
    """


def load_commands() -> None:
    """Import every `_cmd_*.py` module of this package: each registers its subcommands."""
    import importlib
    import pkgutil

    import replay.cli as package

    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
        if module.startswith("_cmd_"):
            importlib.import_module(f"replay.cli.{module}")


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, a job or service manager): the command stops as on Ctrl-C — worker
    processes stopped, outputs never half-written — instead of dying where it stood."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def _show_warning(message: Warning | str, category: type[Warning], *args: Any,
                  **kwargs: Any) -> None:
    """A broken installed plug-in in one line, as replay's errors are (not Python's form, which
    names the line of replay that loads plug-ins); other warnings as Python shows them."""
    from replay._errors import PluginWarning

    if issubclass(category, PluginWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _python_show_warning(message, category, *args, **kwargs)


_python_show_warning = warnings.showwarning


def _utf8_streams() -> None:
    """Standard output in UTF-8 whatever the locale (`PYTHONIOENCODING=ascii`, `LC_ALL=C` with
    `PYTHONUTF8=0`): the tables, JSON and CSV hold text no other encoding has (a traceback
    there), and the same input gives the same bytes in any environment, as `-o FILE` does —
    a lone surrogate (a file name that is no UTF-8, a log's broken text) as its `\\udcXX`
    escape included (`replay._atomic`). Standard error keeps the terminal's encoding,
    escaping what it cannot show.

    A closed standard output (`replay … >&-`: Python makes it None, a traceback at the first
    write or flush) becomes one no write reaches: `-o FILE` needs none, and what would be
    printed fails as a write to a closed descriptor does (EBADF, `cannot write output`)."""
    if sys.stdout is None:
        sys.stdout = open(  # noqa: SIM115 (standard output, for the whole run)
            os.open(os.devnull, os.O_RDONLY), "w", encoding="utf-8", errors="backslashreplace"
        )
    if sys.stderr is None:  # (`2>&-`): `print(file=None)` would write notes into the output
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (the whole run)
    for stream, settings in ((sys.stdout, {"encoding": "utf-8", "errors": "backslashreplace"}),
                             (sys.stderr, {"errors": "backslashreplace"})):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # (not a replaced or missing stream)
            reconfigure(**settings)


def main() -> None:
    _utf8_streams()
    signal.signal(signal.SIGTERM, _terminate)
    warnings.showwarning = _show_warning
    with reported_errors():  # also Ctrl-C while the commands are imported
        try:
            load_commands()
            cli(prog_name="replay")
        finally:  # what click printed itself (--help, --version) fails here, if it does
            sys.stdout.flush()
