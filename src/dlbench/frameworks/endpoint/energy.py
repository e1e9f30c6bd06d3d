"""Energy of an endpoint run where the server's hardware is on this machine: the GPUs
``endpoint.energy_gpus`` names, by NVML's total energy counter, and with
``endpoint.energy_cpu`` the CPU packages, by RAPL; per output token and per request of
the steady-state window.

What is measured is each counter's rise over the steady-state window
(:func:`dlbench.measure.serving.definitions.steady_window`), the same window the
throughput is over, so that joules per token is the window's energy over the window's
tokens. The counters cover whole devices: every process on those GPUs and CPU packages
is in them, not only the server's; on the CPU packages this client is in them too.
``results.energy.scope`` says which counters a run read; ``results.energy.note`` why one
was not read (no NVML, a GPU index NVML does not know, a counter the GPU does not have,
RAPL not readable). A missing counter is a note, never a failed run.

How the window's ends are read: a thread samples every counter every
:data:`INTERVAL_S` seconds, each value stamped with the middle of its read, and the
counter's value at each end of the window is interpolated linearly between the samples
around it. Reading at the window's ends themselves is not possible: in a closed loop
the window ends at the last request issued, known only once the load is over. A thread
rather than the event loop because an NVML energy read takes milliseconds (2.5 ms
median, 17.6 ms at worst on an H100, :mod:`dlbench.measure.monitor`), which on the event
loop would delay requests; NVML and file reads release the GIL. Sampling throughout,
not only at the two ends, also keeps a RAPL counter from wrapping round unseen (at its
``max_energy_range_uj``, often some hundreds of kJ: tens of minutes under load, within
one long run). Interpolating costs at most the change in power times half an interval
at each end: tens of joules for a 500 W swing, against the tens of kilojoules of a
minute's window at that power.

Tokens and requests are those of :mod:`dlbench.measure.serving.definitions`' window
rates, taken back from them (``results.output_tokens_per_s`` and
``results.requests_per_s`` times ``results.window_seconds``): the output tokens whose
text events fall in the window, and the requests whose last text event does.

Example::

    meter = EnergyMeter.open(gpus="0,1", cpu=False, t0_ns=t0)
    meter.start()
    ...  # the load
    meter.stop()
    results.update(meter.results((window_start_ns, window_end_ns), serving))
"""

from __future__ import annotations

import bisect
import contextlib
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dlbench.measure.nvml import load_nvml
from dlbench.measure.rapl import RAPL_ROOT, RaplEnergy

__all__ = ["INTERVAL_S", "EnergyCounter", "EnergyMeter", "NvmlCounter", "RaplCounter",
           "parse_gpus", "value_at", "window_energy"]

#: Seconds between samples of the counters.
INTERVAL_S = 0.2
_GPU_LIST = re.compile(r"[0-9]+(?:,[0-9]+)*")
_NS_PER_S = 1e9
#: (ns from t0, joules)
Sample = tuple[int, float]


def parse_gpus(text: str) -> tuple[int, ...]:
    """The GPU indices of ``endpoint.energy_gpus`` (comma-separated, spaces allowed);
    ValueError on anything else or an index given twice.

    >>> parse_gpus("0, 1"), parse_gpus("")
    ((0, 1), ())
    """
    compact = text.replace(" ", "")
    if not compact:
        return ()
    if not _GPU_LIST.fullmatch(compact):
        raise ValueError("not a comma-separated list of GPU indices")
    indices = tuple(int(part) for part in compact.split(","))
    if len(set(indices)) != len(indices):
        raise ValueError("a GPU index is given twice")
    return indices


class EnergyCounter(Protocol):
    """A cumulative energy counter: its reading only grows (wrap-arounds undone)."""

    #: What it counts, as the scope names it: ``GPU 0``, ``CPU packages``.
    name: str
    #: ``gpu`` or ``cpu``: which of results.energy.gpu_j and cpu_j it adds to.
    kind: str

    def read_j(self) -> float:
        """The counter now, J from an origin of its own."""
        ...


class NvmlCounter:
    """One GPU's total energy counter (``nvmlDeviceGetTotalEnergyConsumption``, mJ since
    the driver loaded; Volta and later), the whole GPU."""

    kind = "gpu"

    def __init__(self, nvml: Any, index: int) -> None:
        self.nvml, self.index, self.name = nvml, index, f"GPU {index}"
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)

    def read_j(self) -> float:
        return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)) / 1000.0


class RaplCounter:
    """Every CPU package's RAPL counter, summed (:class:`dlbench.measure.rapl.RaplEnergy`
    undoes the wrap-arounds between reads)."""

    kind = "cpu"

    def __init__(self, root: Path) -> None:
        self.energy = RaplEnergy(root)
        names = ", ".join(path.name for path, _ in self.energy.domains)
        self.name = f"CPU packages {names}"

    def read_j(self) -> float:
        return self.energy.joules()


def value_at(samples: Sequence[Sample], t_ns: int) -> float | None:
    """A counter's value at ``t_ns``, interpolated linearly between the samples around
    it (times increasing); None outside the samples.

    >>> value_at([(0, 10.0), (100, 30.0)], 25)
    15.0
    """
    times = [t for t, _ in samples]
    i = bisect.bisect_left(times, t_ns)
    if i < len(samples) and times[i] == t_ns:
        return samples[i][1]
    if i == 0 or i == len(samples):
        return None
    (t1, e1), (t2, e2) = samples[i - 1], samples[i]
    return e1 + (e2 - e1) * (t_ns - t1) / (t2 - t1)


def window_energy(samples: Sequence[Sample], start_ns: int, end_ns: int) -> float | None:
    """The counter's rise from ``start_ns`` to ``end_ns``, J; None when either end is
    outside the samples.

    >>> window_energy([(0, 0.0), (10, 5.0), (20, 25.0)], 5, 15)
    12.5
    """
    start, end = value_at(samples, start_ns), value_at(samples, end_ns)
    return None if start is None or end is None else end - start


def _per(energy: float | None, count: float | None) -> float | None:
    return energy / count if energy is not None and count else None


@dataclass
class EnergyMeter:
    """Samples ``counters`` every ``interval_s`` in a thread, between :meth:`start` and
    :meth:`stop`; ``notes`` are why a counter asked for is not among them. ``clock``
    is :func:`time.perf_counter_ns` (t0's clock) but in tests."""

    counters: Sequence[EnergyCounter]
    t0_ns: int
    notes: list[str] = field(default_factory=list)
    interval_s: float = INTERVAL_S
    clock: Callable[[], int] = time.perf_counter_ns
    close: Callable[[], None] | None = None
    samples: dict[str, list[Sample]] = field(init=False)
    errors: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.samples = {counter.name: [] for counter in self.counters}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, gpus: str, cpu: bool, t0_ns: int, *,
             nvml_loader: Callable[[], tuple[Any, str | None]] | None = None,
             rapl_root: Path | None = None) -> EnergyMeter:
        """The counters of ``endpoint.energy_gpus=gpus`` and ``endpoint.energy_cpu=cpu``,
        each read once to be sure it counts; whatever cannot be read is a note.
        ``nvml_loader`` (:func:`~dlbench.measure.nvml.load_nvml`) and ``rapl_root``
        (:data:`~dlbench.measure.rapl.RAPL_ROOT`) are looked up when called: tests
        replace them."""
        counters: list[EnergyCounter] = []
        notes: list[str] = []
        close: Callable[[], None] | None = None
        indices = parse_gpus(gpus)  # checked at plan time: well formed here
        if indices:
            nvml, why = (nvml_loader or load_nvml)()
            if nvml is None:
                notes.append(f"no GPU energy: {why}")
            else:
                close = nvml.nvmlShutdown
                try:
                    counters.extend(_gpu_counters(nvml, indices))
                except _Missing as missing:
                    notes.append(f"no GPU energy: {missing}")
                except Exception as error:  # NVML's own errors: a driver in trouble
                    notes.append(f"no GPU energy: NVML failed ({type(error).__name__}: "
                                 f"{error})")
        if cpu:
            try:
                counters.append(RaplCounter(rapl_root or RAPL_ROOT))
            except (OSError, ValueError) as error:
                reason = ("its counters are readable by root only"
                          if isinstance(error, PermissionError) else str(error))
                notes.append(f"no CPU energy from RAPL: {reason}")
        return cls(counters, t0_ns, notes, close=close)

    def start(self) -> None:
        """Sample every counter now, then every interval in a thread."""
        self.sample()
        if self.counters:
            self._thread = threading.Thread(target=self._run, name="dlbench-energy",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        """Stop the thread, sample once more (after the load's end) and close NVML."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self.sample()
        if self.close is not None:
            with contextlib.suppress(Exception):
                self.close()
        self.close = None  # NVML counts its inits: shut down exactly once

    def sample(self) -> None:
        """Read every counter once, each stamped with the middle of its read. A read
        that fails costs that sample; the first failure of each counter is kept."""
        for counter in self.counters:
            before = self.clock()
            try:
                value = counter.read_j()
            except Exception as error:  # a GPU off the bus, a counter file gone
                self.errors.setdefault(counter.name, f"{type(error).__name__}: {error}")
                continue
            after = self.clock()
            self.samples[counter.name].append(((before + after) // 2 - self.t0_ns, value))

    def results(self, window: tuple[int, int] | None,
                serving: Mapping[str, Any]) -> dict[str, Any]:
        """``results.energy.*`` over ``window`` (ns from t0; None: no window), with the
        window's tokens and requests from ``serving`` (:func:`serving_results`'s); none
        when no counter was asked for.

        A kind of counter (GPU, CPU) gives its joules only when every counter of that
        kind does: the GPUs of one server without one of them would understate it."""
        if not self.counters and not self.notes:
            return {}  # none asked for
        notes = list(self.notes)
        if window is None and self.counters:
            notes.append("no steady-state window (too few requests after the warm-up): "
                         "no energy")
        parts: dict[str, float | None] = {"gpu": None, "cpu": None}
        measured: list[EnergyCounter] = []
        for kind in parts:
            chosen = [c for c in self.counters if c.kind == kind]
            if not chosen or window is None:
                continue
            energies = [window_energy(self.samples[c.name], *window) for c in chosen]
            missing = [(c, j) for c, j in zip(chosen, energies, strict=True)
                       if j is None or j < 0]
            notes.extend(_why_not(c.name, j, self.errors.get(c.name)) for c, j in missing)
            if not missing:
                parts[kind] = sum(j for j in energies if j is not None)
                measured.extend(chosen)
        known = [j for j in parts.values() if j is not None]
        energy = sum(known) if known else None
        seconds = serving.get("results.window_seconds")
        tokens = serving.get("results.output_tokens_per_s")
        requests = serving.get("results.requests_per_s")
        out: dict[str, Any] = {
            "results.energy.gpu_j": parts["gpu"],
            "results.energy.cpu_j": parts["cpu"],
            "results.energy.joules_per_output_token": _per(
                energy, tokens * seconds if tokens is not None and seconds else None),
            "results.energy.joules_per_request": _per(
                energy, requests * seconds if requests is not None and seconds else None),
            "results.energy.scope": _scope(measured),
        }
        if notes:
            out["results.energy.note"] = "; ".join(notes)
        return out


class _Missing(Exception):
    """A GPU asked for whose energy NVML cannot give."""


def _gpu_counters(nvml: Any, indices: Sequence[int]) -> list[EnergyCounter]:
    """One counter per GPU index, each read once; :class:`_Missing` naming the first GPU
    NVML does not have or whose counter does not count."""
    count = int(nvml.nvmlDeviceGetCount())
    counters: list[EnergyCounter] = []
    for index in indices:
        if index >= count:
            seen = ("none" if not count else "GPU 0 only" if count == 1 else
                    f"GPUs 0 to {count - 1}")
            raise _Missing(f"endpoint.energy_gpus names GPU {index}, and NVML sees {seen} "
                           f"(nvidia-smi's numbering)")
        try:
            counter = NvmlCounter(nvml, index)
            counter.read_j()
        except Exception as error:
            if type(error).__name__ in ("NVMLError_NotSupported",
                                        "NVMLError_FunctionNotFound"):
                raise _Missing(f"GPU {index} has no total energy counter (NVML has one "
                               f"from Volta on)") from None
            raise _Missing(f"GPU {index}'s energy counter cannot be read "
                           f"({type(error).__name__}: {error})") from None
        counters.append(counter)
    return counters


def _why_not(name: str, energy: float | None, error: str | None) -> str:
    if energy is not None:  # below 0: the counter went back (a driver reload resets it)
        return f"{name}'s energy counter went backwards during the window"
    if error:
        return f"{name}'s energy counter failed during the run ({error})"
    return f"{name}'s energy counter has no sample before and after the window"


def _scope(measured: Sequence[EnergyCounter]) -> str:
    """One line: which counters, which devices, and that everything on them counts;
    empty when none was measured."""
    gpus = [c.name for c in measured if c.kind == "gpu"]
    cpus = [c.name for c in measured if c.kind == "cpu"]
    parts = []
    if gpus:
        many = len(gpus) > 1
        names = "GPUs " + ", ".join(n.removeprefix("GPU ") for n in gpus) if many else gpus[0]
        parts.append(f"{names} (NVML total energy, {'each' if many else 'the'} whole GPU)")
    parts.extend(f"{name} (RAPL)" for name in cpus)
    if not parts:
        return ""
    them = "them" if len(gpus) + len(cpus) > 1 or cpus else "it"
    client = ", this client included" if cpus else ""
    return (f"{' + '.join(parts)} over the steady-state window; includes every process "
            f"on {them}{client}")
