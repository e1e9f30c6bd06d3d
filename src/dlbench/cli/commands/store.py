"""``dlbench store upgrade PATH``: convert a run's results store of an older format to
this dlbench's, in its file.

Commands that read a store never convert it (they read an older format from a copy in
memory); this one does, explicitly, and refuses a store holding a trigger or a view
dlbench did not make (:mod:`dlbench.results.store.upgrade`).

This module is imported when the command line starts, so it imports only the standard
library at the top.

Example::

    dlbench store upgrade runs/sweep1
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(store: argparse.ArgumentParser) -> None:
    """The sub-commands of ``dlbench store`` and their options, on its parser."""
    sub = store.add_subparsers(dest="store_command", metavar="ACTION", required=True,
                               help="upgrade")
    upgrade = sub.add_parser(
        "upgrade", help="convert a results store of an older format, in its file",
        description="Convert PATH's results store to this dlbench's format, in one "
                    "transaction. A store that holds a trigger or a view dlbench did not "
                    "create is left as it is. Reads (query, report, status, ...) never "
                    "convert a store.")
    upgrade.add_argument("path", metavar="PATH",
                         help="a run directory (--out of dlbench run) or its results.sqlite")
    upgrade.set_defaults(handler=upgrade_store)


def upgrade_store(args: argparse.Namespace) -> int:
    """Convert the store, and say from which format to which (or that it was current)."""
    from dlbench.results.store.upgrade import store_file, upgrade

    path = store_file(Path(args.path))
    before, after = upgrade(path)
    if before == after:
        print(f"results store {path} is already format {after}: nothing to do")
    else:
        print(f"results store {path} converted from format {before} to format {after}")
    return 0
