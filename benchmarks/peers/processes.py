"""Run one benchmark in its own process and measure its peak memory (Linux ``/proc``).

Peak memory is the larger of two measurements:

* the peak, over 50 ms samples, of the proportional set size (PSS) summed over the process
  and all its descendants -- peers start worker pools (pypantera's loader, dp-diffractor's
  rewriter), and PSS splits pages shared after ``fork`` so the sum does not double-count;
* the kernel's high-water mark of the main process's resident set (``VmHWM``), which
  catches spikes shorter than the sampling interval. (Not ``wait4``'s ``ru_maxrss``: Linux
  carries the parent's resident set over ``fork`` + ``exec`` into it, so a child of a large
  orchestrator would report the orchestrator's size.) The workers also report their own
  final ``VmHWM`` (:func:`benchmarks.peers.harness.own_peak_mb`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    """What the parent saw of one run."""

    returncode: int
    stdout: str
    wall_s: float
    peak_mb: float
    tree_pss_mb: float
    hwm_mb: float


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (empty when it is gone)."""
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as stream:
                found.extend(int(child) for child in stream.read().split())
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return found


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo.extend(children(current))
    return tree


def pss_kib(pid: int) -> int:
    """Proportional set size of one process in KiB (0 when unreadable or gone)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as stream:
            for line in stream:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def hwm_kib(pid: int) -> int:
    """Peak resident set (``VmHWM``) of one process in KiB (0 when unreadable or gone)."""
    try:
        with open(f"/proc/{pid}/status") as stream:
            for line in stream:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def run_measured(
    command: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    log: Path | None = None,
    timeout: float | None = None,
    interval: float = 0.05,
) -> Measured:
    """Run ``command``; return its output, wall time and peak memory (MiB)."""
    stderr = open(log, "w") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True)
    chunks: list[str] = []
    reader = threading.Thread(target=lambda: chunks.append(process.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    peak = hwm = 0
    status = 0
    try:
        while True:
            waited, status = os.waitpid(process.pid, os.WNOHANG)
            if waited == process.pid:
                break
            peak = max(peak, sum(pss_kib(pid) for pid in descendants(process.pid)))
            hwm = max(hwm, hwm_kib(process.pid))
            if timeout is not None and time.perf_counter() - start > timeout:
                for pid in reversed(descendants(process.pid)):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, 9)
            time.sleep(interval)
    finally:
        if log is not None and stderr is not subprocess.DEVNULL:
            stderr.close()  # type: ignore[union-attr]
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    if process.stdout is not None:
        process.stdout.close()
    return Measured(
        returncode=process.returncode,
        stdout="".join(chunks),
        wall_s=wall,
        peak_mb=max(peak, hwm) / 1024.0,
        tree_pss_mb=peak / 1024.0,
        hwm_mb=hwm / 1024.0,
    )
