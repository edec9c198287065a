"""One run: every section of the settings, with a description of the machine,
collected in one JSON-serialisable dict."""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import time
from dataclasses import asdict
from pathlib import Path

import torch

from .sections import SECTIONS, bench_matmul
from .settings import Settings

__all__ = ["machine_info", "run"]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_info(device: str = "cpu") -> dict:
    """Where the numbers come from: CPU, cores, threads, library versions."""
    info = {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch": torch.__version__,
        "torch_num_threads": torch.get_num_threads(),
        "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
        "device": device,
    }
    if torch.device(device).type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
    return info


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run(settings: Settings, command: str = "") -> dict:
    """Every section in ``settings.sections``; returns the results as one dict."""
    unknown = [s for s in settings.sections if s not in SECTIONS]
    if unknown:
        raise ValueError(f"unknown sections {unknown}; known: {list(SECTIONS)}")
    started = time.perf_counter()
    results = {
        "schema": 1,
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"
        ),
        "machine": machine_info(settings.device),
        "settings": asdict(settings),
        "load_start": _load(),
        "sections": {},
    }
    print(f"matmul {settings.matmul_n}^3 ...", flush=True)
    before = bench_matmul(settings)
    for name in settings.sections:
        load = _load()
        print(f"== {name} (load {load})", flush=True)
        section_start = time.perf_counter()
        results["sections"][name] = SECTIONS[name](settings)
        results["sections"][name]["seconds"] = round(
            time.perf_counter() - section_start, 1
        )
        results["sections"][name]["load_start"] = load
    after = bench_matmul(settings)
    gflops = before["gflops"] + after["gflops"]
    results["sections"]["matmul"] = {
        "n": settings.matmul_n,
        "gflops_before": before["gflops"],
        "gflops_after": after["gflops"],
        "gflops_median": statistics.median(gflops),
        "rejected_reps": before["rejected_reps"] + after["rejected_reps"],
    }
    results["load_end"] = _load()
    results["seconds"] = round(time.perf_counter() - started, 1)
    return results
