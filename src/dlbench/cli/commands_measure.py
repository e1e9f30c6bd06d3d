"""``dlbench sysinfo``: the environment recorded with every run."""

from __future__ import annotations

import argparse
import json

from dlbench.measure.sysinfo import host_info


def sysinfo(args: argparse.Namespace) -> int:
    """Print this machine's ``sys.*``/``hw.*`` values."""
    info = host_info()
    if args.format == "json":
        print(json.dumps(info, indent=1, sort_keys=True))
        return 0
    width = max(map(len, info))
    for key in sorted(info):
        value = info[key]
        print(f"{key:<{width}}  {value if isinstance(value, str) else json.dumps(value)}")
    return 0
