"""The command line's vocabulary and argparse's errors as one line.

Errors name the flag: ``dlbench: error: --format: 'x' is not one of text, json``,
never the usage block (``--help`` still prints that). :class:`Parser` is an
:class:`argparse.ArgumentParser` whose ``error`` raises
:class:`~dlbench.errors.UsageError` with the rewritten message instead of printing
usage and exiting; the command line prints it like any other user error.

One vocabulary across commands:

- a filter of records is ``--where JSON`` wherever one is taken (``report`` and
  ``baseline`` still accept their old ``--query``, hidden, with a warning:
  :class:`DeprecatedAlias`);
- plain text output is ``--format text`` in every command (``table``, the old name
  in ``query`` and ``plan``, is still accepted: :data:`FORMAT_ALIASES`);
- every option's help shows its default (:class:`HelpFormatter`), and
  ``dlbench help --flags`` lists every command's options (:func:`flag_lines`).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import re
import shutil
import sys
import textwrap
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NoReturn

from dlbench.errors import DlbenchError, UsageError
from dlbench.textsafe import safe_text

_REWRITES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^argument (?P<flag>[^:]+): invalid choice: (?P<value>.*?) "
                r"\(choose from (?P<choices>.*)\)$"), "{flag}: {value} is not one of {choices}"),
    (re.compile(r"^argument (?P<flag>[^:]+): invalid int value: (?P<value>.*)$"),
     "{flag}: {value} is not a whole number"),
    (re.compile(r"^argument (?P<flag>[^:]+): invalid float value: (?P<value>.*)$"),
     "{flag}: {value} is not a number"),
    # argparse takes a value that starts with '-' (-5%) for a flag, so says none came.
    (re.compile(r"^argument (?P<flag>[^:]+): expected one argument$"),
     "{flag}: needs a value (one that starts with '-' is written {flag}=VALUE)"),
    (re.compile(r"^argument (?P<flag>[^:]+): expected at least one argument$"),
     "{flag}: needs at least one value"),
    (re.compile(r"^argument (?P<flag>[^:]+): ignored explicit argument (?P<value>.*)$"),
     "{flag}: takes no value (got {value})"),
    (re.compile(r"^argument (?P<flag>[^:]+): (?P<rest>.*)$"), "{flag}: {rest}"),
]


def _choices(text: str) -> str:
    # argparse quotes each choice ('table', 'json'); the names read better bare.
    return ", ".join(part.strip().strip("'\"") for part in text.split(","))


def one_line(prog: str, message: str) -> str:
    """argparse's ``message`` from the parser ``prog`` (``dlbench query``) as the one
    line dlbench prints."""
    command = prog.split(" ", 1)[1] if " " in prog else ""
    help_hint = f"{prog} --help"
    required = re.match(r"^the following arguments are required: (?P<names>.*)$", message)
    if required:
        names = required.group("names")
        if names == "COMMAND":
            return "a COMMAND is needed (dlbench --help lists them)"
        return f"{command or prog}: {names} {'is' if ',' not in names else 'are'} required " \
               f"(see {help_hint})"
    unknown = re.match(r"^unrecognized arguments: (?P<args>.*)$", message)
    if unknown:
        args = unknown.group("args")
        plural = "s" if " " in args else ""
        return f"unrecognized argument{plural}: {args} (see dlbench COMMAND --help for the flags)"
    for pattern, template in _REWRITES:
        found = pattern.match(message)
        if found:
            fields = found.groupdict()
            if "choices" in fields:
                fields["choices"] = _choices(fields["choices"])
            return template.format(**fields)
    return f"{command}: {message}" if command else message


#: What the parser takes for a (negative) value rather than a flag.
_NEGATIVE_VALUE = re.compile(r"^-\.?\d")


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` lines and whose help
    shows every default (its sub-commands' parsers are Parsers too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        # A value that starts with a minus sign and a digit (-5%, -1e3, -.5) is a
        # value, not an unknown flag: argparse's own test takes plain -5 and -0.5
        # only (Python 3.13 widened it the same way). No dlbench flag looks like one.
        self._negative_number_matcher = _NEGATIVE_VALUE

    def error(self, message: str) -> NoReturn:
        """Raise the one-line error for ``message`` (argparse calls this)."""
        raise UsageError(one_line(self.prog, message))


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, with ``(default: X)`` after every option that has a default
    its help does not already name."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if has_default(action) and "default" not in text and text != argparse.SUPPRESS:
            text += " (default: %(default)s)"
        return text


def has_default(action: argparse.Action) -> bool:
    """Whether ``action`` has a default worth showing: not None, not a switch's
    False, not an empty list, not argparse's SUPPRESS."""
    default = action.default
    return not (default is None or default is False or default == []
                or default == argparse.SUPPRESS)


def wrap_width() -> int:
    """Columns to wrap text to: the terminal's, or 80 when stdout is not a terminal."""
    if not sys.stdout.isatty():
        return 80
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def wrapped_rows(rows: Sequence[tuple[str, str]], width: int | None = None) -> list[str]:
    """Two columns, the second wrapped to ``width`` (default :func:`wrap_width`) and
    its continuation lines indented under it."""
    width = wrap_width() if width is None else width
    first = max((len(name) for name, _ in rows), default=0)
    indent = " " * (first + 2)
    lines = []
    for name, text in rows:
        lines += textwrap.wrap(text, width=max(width, len(indent) + 20),
                               initial_indent=name.ljust(first) + "  ",
                               subsequent_indent=indent, break_on_hyphens=False,
                               break_long_words=False) or [name]
    return lines


#: Old names of output formats, still accepted: ``table`` was plain text in ``query``
#: and ``plan``, where the other commands said ``text``.
FORMAT_ALIASES = {"table": "text"}


def format_name(value: str) -> str:
    """The format ``--format value`` means (``table`` is ``text``)."""
    return FORMAT_ALIASES.get(value, value)


def format_choices(family: Sequence[str], *names: str) -> tuple[str, ...]:
    """The formats of ``family`` under their current names, those in ``names`` only
    when given."""
    current = tuple(dict.fromkeys(format_name(name) for name in family))
    return tuple(name for name in current if not names or name in names)


def add_format(parser: argparse.ArgumentParser, choices: Sequence[str], what: str) -> None:
    """``--format`` with ``choices``, the first the default; ``table`` is taken as
    ``text``. ``what`` says what is written."""
    aliases = [old for old, new in FORMAT_ALIASES.items() if new in choices]
    also = f"; {', '.join(aliases)} means text" if aliases else ""
    parser.add_argument("--format", type=format_name, choices=tuple(choices),
                        default=choices[0], help=f"{what}{also}")


class DeprecatedAlias(argparse.Action):
    """An old flag that still works: it sets the new flag's value and, once per
    command line, says on stderr to use the new flag. Hidden from ``--help``. The
    flag used is kept in ``<dest>_flag``, so that an error names what was typed."""

    def __init__(self, option_strings: Sequence[str], dest: str, replacement: str,
                 **kwargs: Any) -> None:
        kwargs.update(help=argparse.SUPPRESS, default=argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.replacement = replacement

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        warned: set[str] = getattr(namespace, "_deprecated_warned", set())
        if option_string not in warned:
            print(f"dlbench: warning: {option_string} is deprecated; use {self.replacement} "
                  "(same meaning)", file=sys.stderr)
            namespace._deprecated_warned = warned | {option_string}
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_flag", option_string)


def add_where(parser: argparse.ArgumentParser, what: str = "select records first") -> None:
    """``--where JSON``, the filter of records, with ``--query`` as its deprecated alias."""
    parser.add_argument("--where", default="{}", metavar="JSON",
                        help=f"{what}: DLBS's JSON query, e.g. "
                             '\'{"exp.model": "resnet50"}\' (default: {}, every record)')
    parser.add_argument("--query", dest="where", action=DeprecatedAlias,
                        replacement="--where", metavar="JSON")
    parser.set_defaults(where_flag="--where")


def add_metric(parser: argparse.ArgumentParser, what: str) -> None:
    """``--metric KEY`` (``what`` it is used for) and ``--better higher|lower``, which way
    it improves where the key declares no direction (read with :func:`better_flag`)."""
    parser.add_argument("--metric", default="results.throughput", metavar="KEY",
                        help=f"{what}; which way is better is the key's declared direction "
                             "(dlbench help --results, column better)")
    parser.add_argument("--better", choices=("higher", "lower"), default=None,
                        help="which way the metric improves, for a key that declares no "
                             "direction (or to override it)")


#: The gate on verdicts that could not be given a direction, named as the other
#: ``--fail-on-*`` gates are; ``compare`` and ``history check`` take it.
FAIL_ON_INCONCLUSIVE = "--fail-on-inconclusive"


def add_fail_on_inconclusive(parser: argparse.ArgumentParser, what: str) -> None:
    """:data:`FAIL_ON_INCONCLUSIVE`: exit 1 when ``what`` (a configuration's change)
    is inconclusive: its inputs are unstable, contended or too few to give a direction
    (read with :func:`fail_on_inconclusive`)."""
    parser.add_argument(FAIL_ON_INCONCLUSIVE, action="store_true",
                        help=f"exit 1 also when {what} is inconclusive (unstable or "
                             "contended inputs, too few samples or runs)")


def fail_on_inconclusive(args: argparse.Namespace) -> bool:
    """Whether :data:`FAIL_ON_INCONCLUSIVE` was given (False on a parser without it)."""
    return bool(getattr(args, "fail_on_inconclusive", False))


def known_key(name: str) -> bool:
    """Whether ``name`` is a key dlbench declares: a result, ``sys.*`` or ``hw.*`` key
    of the key table, or a parameter of the registry (``exp.*``, a framework's)."""
    from dlbench.config.registry import REGISTRY
    from dlbench.results.keys.lookup import lookup

    return lookup(name) is not None or REGISTRY.get(name) is not None


def _declared_names() -> list[str]:
    """Every declared key and parameter name without a placeholder: what a typo is
    most likely a typo of."""
    from dlbench.config.registry import REGISTRY
    from dlbench.results.keys.table import RESULT_KEYS

    return [*(k.name for k in RESULT_KEYS if "<" not in k.name), *REGISTRY.names()]


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``did you mean results.throughput?`` for the candidate closest to ``name``,
    or empty when none is close: the hint every misspelled name gets."""
    close = difflib.get_close_matches(name, sorted(set(candidates)), n=1, cutoff=0.6)
    return f"did you mean {close[0]}?" if close else ""


def check_keys(flag: str, names: Sequence[str], present: Iterable[str], records: int) -> None:
    """:class:`UsageError` naming ``flag`` for the first of ``names`` that is unknown:
    neither declared (:func:`known_key`) nor among ``present``, the keys of the
    ``records`` records read (a ``user.*`` key, or a framework's own, is fine there).
    The error says which key, and suggests the closest known or present one."""
    seen = set(present)
    for name in names:
        if name in seen or known_key(name):
            continue
        hint = did_you_mean(name, [*seen, *_declared_names()])
        raise UsageError(
            f"{flag} {name}: not a declared key, and none of the {records} record(s) has "
            f"it; {hint or 'dlbench help --results lists the declared keys'}")


def metric_direction(flag: str, metric: str, better: bool | None) -> bool:
    """Whether a larger ``metric`` (named by ``flag``) is better: ``better`` where given
    (``--better``), else its declared direction; the error for a key that declares none
    also suggests the closest declared key when ``metric`` is not one."""
    from dlbench.errors import MetricError
    from dlbench.results.keys.lookup import higher_is_better

    try:
        return higher_is_better(metric, better, where=flag)
    except MetricError as error:
        hint = "" if known_key(metric) else did_you_mean(metric, _declared_names())
        if not hint:
            raise
        raise MetricError(f"{error}; {hint}") from None


def better_flag(args: argparse.Namespace) -> bool | None:
    """``--better`` as ``higher_is_better``: True, False, or None (the key decides)."""
    return None if args.better is None else args.better == "higher"


def add_log_y(parser: argparse.ArgumentParser) -> None:
    """``--log-y``: a chart's y axis on a log scale, for every chart kind it draws."""
    parser.add_argument("--log-y", action="store_true",
                        help="a log scale on the y axis, for values orders of magnitude "
                             "apart (values above 0 only)")


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """Each sub-command of ``parser``: its name, its one line of help, its parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._get_subactions()}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def overview(parser: argparse.ArgumentParser) -> list[str]:
    """What bare ``dlbench`` prints: the usage and every command with its help."""
    lines = ["usage: dlbench [--version] COMMAND [options]", "", "commands:"]
    lines += ["  " + line for line in wrapped_rows(
        [(name, text) for name, text, _ in _subcommands(parser)], wrap_width() - 2)]
    lines += ["", "dlbench COMMAND --help: one command's options; dlbench help --flags: every "
              "command's options"]
    return lines


def _flag_text(action: argparse.Action) -> str:
    name = action.option_strings[-1] if action.option_strings else (action.metavar or
                                                                     action.dest)
    if action.nargs == 0 or not action.option_strings:
        return str(name)
    if action.choices is not None and action.metavar is None:
        return f"{name} {{{','.join(map(str, action.choices))}}}"
    return f"{name} {action.metavar or action.dest.upper()}"


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options and positional arguments of one command that ``--help`` shows."""
    return [a for a in parser._actions
            if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def flag_lines(parser: argparse.ArgumentParser, width: int | None = None) -> list[str]:
    """Every command's options, each named once, from the parser itself: the
    vocabulary of the command line in one place."""
    width = wrap_width() if width is None else width
    commands = _subcommands(parser)
    first = max(len(name) for name, _, _ in commands)

    def packed(head: str, sub: argparse.ArgumentParser, indent: int) -> list[str]:
        # Packed option by option: a line never splits `--input SRC` in two.
        lines, line = [], head.ljust(indent)
        items = [_flag_text(a) for a in options(sub)] or ["(no options)"]
        for index, item in enumerate(items):
            item += "," if index < len(items) - 1 else ""
            if len(line) + 1 + len(item) > width and line.strip() != head.strip():
                lines.append(line)
                line = " " * indent
            line += " " + item
        return [*lines, line]

    lines = []
    for name, _, sub in commands:
        lines += packed(name, sub, first + 1)
        # A command of actions (history import, check, html): each action's options,
        # indented under the command.
        actions = _subcommands(sub)
        inner = max((len(action) for action, _, _ in actions), default=0)
        for action, _, own in actions:
            lines += packed(" " * (first + 2) + action, own, first + inner + 3)
    hidden = sorted({f"{flag} ({a.replacement})" for _, _, sub in commands
                     for a in sub._actions if isinstance(a, DeprecatedAlias)
                     for flag in a.option_strings})
    aliases = [f"--format {old} ({new})" for old, new in FORMAT_ALIASES.items()]
    return [*lines, "", f"old names, still accepted: {', '.join([*hidden, *aliases])}"]


def warn(message: object) -> None:
    """Print ``dlbench: warning: MESSAGE`` on stderr, as one terminal-safe line: a
    warning quotes paths, values and messages from data."""
    print(f"dlbench: warning: {safe_text(str(message))}", file=sys.stderr)


def note(message: str) -> None:
    """Print ``message`` (a line naming paths or values from data, such as where a
    file was written) on stderr, terminal-safe."""
    print(safe_text(message), file=sys.stderr)


@contextlib.contextmanager
def read_warnings(*collected: Sequence[object]) -> Iterator[None]:
    """Around reading inputs (and what is made of them) that collects warnings in the
    lists ``collected`` (what could not be read: a log cut short, a file that is no
    log): when the block ends well, each is printed as a warning line; when it ends in a
    DlbenchError, they go into the error's one line instead (the first, and how many
    more), so that a failed command prints exactly one line, its error, which also says
    what reading found.

    >>> try:
    ...     with read_warnings(["x.log: empty file; no record"]):
    ...         raise UsageError("--input x.log holds no records")
    ... except UsageError as error:
    ...     print(error)
    --input x.log holds no records (x.log: empty file; no record)
    """
    try:
        yield
    except DlbenchError as error:
        warnings = [warning for found in collected for warning in found]
        if not warnings:
            raise
        more = len(warnings) - 1
        also = f"; and {more} more warning{'s' if more != 1 else ''}" if more else ""
        raise type(error)(f"{error} ({warnings[0]}{also})") from None
    for found in collected:
        for warning in found:
            warn(warning)
