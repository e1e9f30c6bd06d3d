"""argparse's errors as one line that names the flag: ``dlbench: error: --format: 'x'
is not one of table, json``, never the usage block (``--help`` still prints that).

:class:`Parser` is an :class:`argparse.ArgumentParser` whose ``error`` raises
:class:`~dlbench.errors.UsageError` with the rewritten message instead of printing
usage and exiting; the command line prints it like any other user error.
"""

from __future__ import annotations

import argparse
import re
from typing import NoReturn

from dlbench.errors import UsageError

_REWRITES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^argument (?P<flag>[^:]+): invalid choice: (?P<value>.*?) "
                r"\(choose from (?P<choices>.*)\)$"), "{flag}: {value} is not one of {choices}"),
    (re.compile(r"^argument (?P<flag>[^:]+): invalid int value: (?P<value>.*)$"),
     "{flag}: {value} is not a whole number"),
    (re.compile(r"^argument (?P<flag>[^:]+): invalid float value: (?P<value>.*)$"),
     "{flag}: {value} is not a number"),
    (re.compile(r"^argument (?P<flag>[^:]+): expected one argument$"), "{flag}: needs a value"),
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


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` lines."""

    def error(self, message: str) -> NoReturn:
        """Raise the one-line error for ``message`` (argparse calls this)."""
        raise UsageError(one_line(self.prog, message))
