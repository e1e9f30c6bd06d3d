"""What a set of records says about its own trustworthiness: how many of them the
worker judged unstable (``results.stable`` false), how many of those because other
processes competed for the CPU or the GPU, how many only because their batch times
spread widely, and why.

Two kinds of instability differ for a verdict. A wide **spread** of batch times (a
coefficient of variation above ``exp.cv_threshold``, a confidence interval wider
than its target) is in the very values a test compares: its variance. Anything else
(contention, throttled clocks, warm-up still visible, processes that disagree, too
few batches) is a **bias** that the values cannot show, and that can move a mean
many times over: a verdict on such records has no direction.

The worker decides stability once (:mod:`dlbench.measure.stability`, which writes
``results.stable`` and ``results.unstable_reasons``); this module only reads that
verdict, so that ``compare``, ``history check`` and the scorecard never re-decide
it. The two phrases that mark contention in a reason are defined here and used by
the worker to write them, so that writing and reading agree.

Example::

    noise = record_noise([{"results.stable": False,
                           "results.unstable_reasons": ["cpu contention: ..."]}])
    noise.flags()  # ["contention"]
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CPU_CONTENTION", "GPU_SHARED", "SPREAD_PREFIXES", "Noise", "is_contention",
           "is_spread", "join_reasons", "record_noise"]

#: How a reason about another process using the worker's CPUs begins.
CPU_CONTENTION = "cpu contention"
#: How a reason about another process on the worker's GPU ends.
GPU_SHARED = "other process(es) on the GPU"

#: How the reasons that describe only the spread of batch times begin (after a
#: ``process N:`` prefix): the coefficient of variation and the confidence interval.
SPREAD_PREFIXES = ("cv ", "ci ")

#: A reason's text longer than this is cut where it is shown among others.
_SHORT = 90


def is_contention(reason: str) -> bool:
    """Whether ``reason`` (one of ``results.unstable_reasons``) says that another
    process competed for the worker's CPUs or GPU."""
    return CPU_CONTENTION in reason or GPU_SHARED in reason


def is_spread(reason: str) -> bool:
    """Whether ``reason`` says only that batch times spread widely
    (:data:`SPREAD_PREFIXES`), which a test of those times already weighs."""
    return re.sub(r"^process \d+: ", "", reason).startswith(SPREAD_PREFIXES)


@dataclass(frozen=True)
class Noise:
    """The stability flags of a set of records.

    ``records``: how many were looked at; ``unstable``: how many have
    ``results.stable`` false; of those, ``contended``: how many give a contention
    reason, and ``spread``: how many give only spread reasons (:func:`is_spread`);
    ``reasons``: their distinct reasons, in the order first seen.
    """

    records: int
    unstable: int
    contended: int
    reasons: tuple[str, ...]
    spread: int = 0

    @property
    def flagged(self) -> bool:
        """Whether some record is unstable."""
        return self.unstable > 0

    @property
    def biased(self) -> bool:
        """Whether some record is unstable for more than its spread: contention or
        another bias that the values themselves cannot show."""
        return self.unstable > self.spread

    def flags(self) -> list[str]:
        """Short words for a table cell, each with how many of the records when that
        is not all of them: ``contention``; ``unstable`` (another bias); ``noisy``
        (spread only)."""
        words = []
        for word, count in (("contention", self.contended),
                            ("unstable", self.unstable - self.contended - self.spread),
                            ("noisy", self.spread)):
            if count:
                words.append(word if count == self.records == 1
                             else f"{word} {count}/{self.records}")
        return words

    def describe(self) -> str:
        """The flags with every reason, in one line: ``contention 1/2 (cpu
        contention: ...)``; empty when nothing is flagged."""
        if not self.flagged:
            return ""
        return f"{', '.join(self.flags())} ({join_reasons(self.reasons)})"


def record_noise(records: Iterable[Mapping[str, Any]]) -> Noise:
    """The :class:`Noise` of ``records``: a record counts as unstable when its
    ``results.stable`` is false; one without the key (an older or foreign record)
    counts as stable, since nothing says otherwise."""
    count = unstable = contended = spread = 0
    reasons: dict[str, None] = {}
    for record in records:
        count += 1
        if record.get("results.stable") is not False:
            continue
        unstable += 1
        own = record.get("results.unstable_reasons")
        texts = [str(r) for r in own] if isinstance(own, list) else []
        if any(is_contention(text) for text in texts):
            contended += 1
        elif texts and all(is_spread(text) for text in texts):
            spread += 1
        for text in texts or ["no reason recorded"]:
            reasons.setdefault(text)
    return Noise(count, unstable, contended, tuple(reasons), spread)


def _gist(reason: str) -> str:
    """What a reason is about, without its figures: the words before its first colon
    (after a ``process N:`` or ``gpu N:`` prefix), at most :data:`_SHORT` characters."""
    found = re.match(r"(process \d+: )?(gpu \d+:? )?([^:]*)", reason)
    gist = "".join(part or "" for part in found.groups()) if found else reason
    return gist if len(gist) <= _SHORT else gist[:_SHORT - 1] + "…"


def join_reasons(reasons: Sequence[str], shown: int = 3) -> str:
    """Reasons in one line, separated by ``; ``: every one when there are at most
    ``shown``, else the first ``shown`` and ``and N more reasons: ...`` with the rest
    cut to what each is about (``warm-up visible (2)`` for two alike), so that a reader
    learns what they are."""
    if len(reasons) <= shown:
        return "; ".join(reasons)
    gists: dict[str, int] = {}
    for text in reasons[shown:]:
        gists[_gist(text)] = gists.get(_gist(text), 0) + 1
    rest = [gist if count == 1 else f"{gist} ({count})" for gist, count in gists.items()]
    more = len(reasons) - shown
    return ("; ".join(reasons[:shown])
            + f"; and {more} more reason{'s' if more != 1 else ''}: {', '.join(rest)}")
