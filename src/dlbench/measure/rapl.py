"""CPU energy from RAPL, the counters Linux exposes under ``/sys/class/powercap``.

Each CPU package has a cumulative energy counter in µJ that wraps around at its
``max_energy_range_uj``; :class:`RaplEnergy` sums the packages' counters from when it
was made, across wraparounds. Recent kernels make the counters readable by root only.

Example::

    energy = RaplEnergy(RAPL_ROOT)  # FileNotFoundError without package counters
    ...
    energy.joules()                 # J used by the CPU packages since then
"""

from __future__ import annotations

from pathlib import Path

#: Where Linux exposes RAPL energy counters.
RAPL_ROOT = Path("/sys/class/powercap")


class RaplEnergy:
    """Cumulative energy of the CPU packages from RAPL, with counter wraparound."""

    def __init__(self, root: Path) -> None:
        self.domains: list[tuple[Path, int]] = []
        for domain in sorted(root.glob("intel-rapl:*")):
            # Package domains only: sub-domains (core, dram: intel-rapl:0:0) are parts
            # of a package, and "psys" covers the whole platform, packages included.
            name_file = domain / "name"
            if domain.name.count(":") != 1 or not name_file.is_file():
                continue
            if not name_file.read_text().strip().startswith("package"):
                continue
            self.domains.append((domain, int((domain / "max_energy_range_uj").read_text())))
        if not self.domains:
            raise FileNotFoundError(f"no RAPL package counters under {root}")
        self.last = [self._raw(path) for path, _ in self.domains]
        self.total_uj = 0

    @staticmethod
    def _raw(path: Path) -> int:
        return int((path / "energy_uj").read_text())

    def joules(self) -> float:
        """Energy in J since this object was made."""
        for i, (path, max_range) in enumerate(self.domains):
            raw = self._raw(path)
            delta = raw - self.last[i]
            if delta < 0:  # the counter wrapped around at max_energy_range_uj
                delta += max_range
            self.total_uj += delta
            self.last[i] = raw
        return self.total_uj / 1e6
