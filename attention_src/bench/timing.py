"""Timing on a shared, noisy machine: round-robin repetitions, thrown away and
repeated while other processes use the CPU, and paired ratios."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

__all__ = ["time_round_robin", "summarize"]


def _sync(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def _cpu_ticks() -> tuple[int, int, int] | None:
    """Clock ticks so far: (all CPUs, all CPUs busy, this process); None off
    Linux."""
    try:
        fields = [
            int(x)
            for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
        ]
        own = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return None
    total = sum(fields)
    busy = total - fields[3] - fields[4]  # minus idle and iowait
    # utime + stime of all our threads
    return total, busy, int(own[11]) + int(own[12])


def _other_share(before, after) -> float | None:
    """Share of the machine's CPU time that other processes used between two
    snapshots."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    other = (after[1] - before[1]) - (after[2] - before[2])
    return max(0.0, other / (after[0] - before[0]))


def _wait_until_quiet(
    quiet_share: float, budget_s: float, window_s: float = 2.0
) -> float:
    """Sleep in windows of ``window_s`` until other processes use at most
    ``quiet_share`` of the CPU time (or ``budget_s`` runs out); returns the time
    slept."""
    slept = 0.0
    while slept < budget_s:
        before = _cpu_ticks()
        time.sleep(window_s)
        slept += window_s
        share = _other_share(before, _cpu_ticks())
        if share is None or share <= quiet_share:
            break
    return slept


def time_round_robin(
    fns: dict[str, Callable[[], object]],
    reps: int,
    min_sample_s: float = 0.0,
    device: torch.device | str = "cpu",
    *,
    quiet_share: float | None = None,
    max_wait_s: float = 0.0,
    report: dict | None = None,
) -> dict[str, list[float]]:
    """Seconds per call of each function, ``reps`` samples each, interleaved.

    Each function is called once first (warm-up; it also tells how many calls
    make a sample of at least ``min_sample_s``). Then every repetition times
    every function once, starting with a different one each time, so that a
    burst of load on a shared machine lands on all of them alike.

    With ``quiet_share`` set, a repetition during which other processes used
    more than that share of the machine's CPU time is thrown away, and timing
    resumes once the machine is quiet again -- until ``max_wait_s`` seconds
    have been spent waiting; after that repetitions are kept as they come.
    ``report``, if given, receives how many were thrown away and the share of
    other processes during each kept one.
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    calls = {}
    for name, fn in fns.items():
        start = time.perf_counter()
        fn()
        _sync(device)
        once = time.perf_counter() - start
        calls[name] = max(1, math.ceil(min_sample_s / max(once, 1e-9)))
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    shares: list[float | None] = []
    rejected, waited, attempt = 0, 0.0, 0
    while len(shares) < reps:
        order = names[attempt % len(names) :] + names[: attempt % len(names)]
        attempt += 1
        before = _cpu_ticks()
        sample = {}
        for name in order:
            fn, n = fns[name], calls[name]
            start = time.perf_counter()
            for _ in range(n):
                fn()
            _sync(device)
            sample[name] = (time.perf_counter() - start) / n
        share = _other_share(before, _cpu_ticks())
        disturbed = (
            quiet_share is not None and share is not None and share > quiet_share
        )
        if disturbed and waited < max_wait_s:
            rejected += 1
            waited += _wait_until_quiet(quiet_share, max_wait_s - waited)
            continue
        for name in names:
            times[name].append(sample[name])
        shares.append(share)
    if report is not None:
        report["rejected_reps"] = rejected
        report["other_cpu_share"] = [
            None if x is None else round(x, 3) for x in shares
        ]
    return times


def summarize(times: dict[str, list[float]], reference: str) -> dict:
    """Median seconds per function and the median of its paired ratios to
    ``reference``."""
    ref = times[reference]
    return {
        "median_s": {name: statistics.median(ts) for name, ts in times.items()},
        "ratio": {
            name: statistics.median(t / r for t, r in zip(ts, ref, strict=True))
            for name, ts in times.items()
        },
        "times_s": times,
    }
