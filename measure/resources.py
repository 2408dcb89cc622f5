"""CPU-seconds and peak resident memory of a process tree, sampled with psutil.

Spark's driver JVM is a child of the Python process that built the session, so
sampling a design's process and its descendants covers every process the design ran.
Processes can be excluded by their command line (the load generator is not part of
the design's cost).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import psutil


@dataclass
class TreeUsage:
    """What a sampled process tree used."""

    cpu_seconds: dict[int, float] = field(default_factory=dict)  # last value per PID
    peak_rss: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)
    peak_tree_rss: int = 0
    samples: int = 0

    def as_dict(self) -> dict[str, Any]:
        """Totals and per-process figures (name, CPU-seconds, peak RSS in MiB)."""
        return {
            "cpu_seconds": round(sum(self.cpu_seconds.values()), 2),
            "peak_rss_mib": round(self.peak_tree_rss / 2**20, 1),
            "samples": self.samples,
            "processes": [
                {
                    "pid": pid,
                    "name": self.names.get(pid, "?"),
                    "cpu_seconds": round(cpu, 2),
                    "peak_rss_mib": round(self.peak_rss.get(pid, 0) / 2**20, 1),
                }
                for pid, cpu in sorted(self.cpu_seconds.items())
            ],
        }


class TreeSampler:
    """Sample ``root`` and its descendants every ``interval`` seconds in a thread.

    Use as a context manager; :attr:`usage` holds the figures. CPU time of a process
    that exits between samples is known up to its last sample.
    """

    def __init__(
        self, root: int, interval: float = 0.5, exclude_cmdline: tuple[str, ...] = ()
    ) -> None:
        self.root = root
        self.interval = interval
        self.exclude_cmdline = exclude_cmdline
        self.usage = TreeUsage()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lk-tree-sampler", daemon=True)

    def _tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.root)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def snapshot(self) -> dict[str, Any]:
        """A fresh sample, then the figures so far (``TreeUsage.as_dict``)."""
        self.sample()
        with self._lock:
            return self.usage.as_dict()

    def sample(self) -> None:
        """One sample of every live process of the tree."""
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        total = 0
        for proc in self._tree():
            try:
                with proc.oneshot():
                    if self._excluded(proc):
                        continue
                    cpu = proc.cpu_times()
                    rss = proc.memory_info().rss
                    name = self.usage.names.get(proc.pid) or " ".join(proc.cmdline()[:3])[:80]
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self.usage.cpu_seconds[proc.pid] = cpu.user + cpu.system
            self.usage.peak_rss[proc.pid] = max(self.usage.peak_rss.get(proc.pid, 0), rss)
            self.usage.names[proc.pid] = name
            total += rss
        self.usage.peak_tree_rss = max(self.usage.peak_tree_rss, total)
        self.usage.samples += 1

    def _excluded(self, proc: psutil.Process) -> bool:
        if not self.exclude_cmdline:
            return False
        line = " ".join(proc.cmdline())
        return any(text in line for text in self.exclude_cmdline)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
