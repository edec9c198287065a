"""The results of a run: read back from a file, printed as plain-text tables."""

from __future__ import annotations

import json
from pathlib import Path

from .settings import REPO_ROOT

__all__ = ["DEFAULT_RESULTS", "format_tables", "load_results"]

DEFAULT_RESULTS = REPO_ROOT / "docs" / "data" / "benchmark-cpu.json"


def _attention_line(row: dict) -> str:
    med, ratio, gf = row["median_s"], row["ratio"], row["gflops"]
    parts = [f"  L={row['L']:5d} {'causal' if row['causal'] else 'full  '}"]
    parts += [
        f"{n} {med[n] * 1e3:9.2f} ms ({ratio[n]:5.2f}x, {gf[n]:6.1f} GF/s)"
        for n in med
    ]
    if "matmul_gflops" in row:
        parts.append(f"matmul {row['matmul_gflops']:6.1f} GF/s")
    if row.get("rejected_reps"):
        parts.append(f"[{row['rejected_reps']} reps repeated: machine busy]")
    return "  ".join(parts)


def _module_line(row: dict) -> str:
    med, ratio = row["median_s"], row["ratio"]
    parts = [f"  {row['mode']:9s} L={row['L']:5d}"]
    parts += [f"{n} {med[n] * 1e3:9.2f} ms ({ratio[n]:5.2f}x)" for n in med]
    if row.get("rejected_reps"):
        parts.append(f"[{row['rejected_reps']} reps repeated: machine busy]")
    return "  ".join(parts)


def _kv_line(row: dict) -> str:
    med = row["median_s"]
    line = (
        f"  prompt {row['prompt_len']:5d} + {row['new_tokens']} new: "
        f"no cache {med['no_cache']:8.3f} s, cache {med['cache']:8.3f} s, "
        f"speedup {row['speedup']:6.2f}x"
    )
    if row.get("rejected_reps"):
        line += f"  [{row['rejected_reps']} reps repeated: machine busy]"
    return line


def format_tables(results: dict) -> str:
    """The results as plain-text tables (what the command prints at the end)."""
    lines = [
        f"{results['machine']['cpu_model']}, "
        f"{results['machine']['torch_num_threads']} threads, torch "
        f"{results['machine']['torch']}, {results['settings']['dtype']}",
        f"load average {results['load_start']} -> {results.get('load_end')}, "
        f"{results.get('seconds')} s",
    ]
    sections = results["sections"]
    if "matmul" in sections:
        m = sections["matmul"]
        lines.append(
            f"matmul {m['n']}x{m['n']}: {m['gflops_median']:.1f} GFLOP/s (median)"
        )
    if "attention" in sections:
        a = sections["attention"]
        lines.append(
            f"\nattention B={a['batch']} H={a['heads']} Dh={a['head_dim']}, L = S "
            "(time per call; ratio to SDPA; GFLOP/s)"
        )
        lines += [_attention_line(row) for row in a["rows"]]
    if "modules" in sections:
        m = sections["modules"]
        lines.append(
            f"\nmodules B={m['batch']} D={m['d_model']} H={m['heads']} "
            "(ratio to nn.MultiheadAttention)"
        )
        lines += [_module_line(row) for row in m["rows"]]
    if "blocks" in sections:
        b = sections["blocks"]
        lines.append(
            f"\ntiled_attention tile sizes at L = {b['L']} (ratio to SDPA)"
        )
        lines += [
            f"  {r['block_size']:4d} x {r['key_block_size']:<5d} "
            f"{r['median_s'] * 1e3:9.1f} ms {r['ratio']:5.2f}x"
            for r in b["rows"]
        ]
    if "memory" in sections:
        lines.append("\npeak extra memory of one call (MiB)")
        for r in sections["memory"]["rows"]:
            lines.append(
                f"  {r['impl']:6s} L={r['L']:5d} "
                f"{r['peak_extra_bytes'] / 2**20:10.1f}   weights "
                f"{r['weights_bytes'] / 2**20:10.1f}"
            )
    if "kv_cache" in sections:
        kv = sections["kv_cache"]
        lines.append(
            f"\nKV cache, greedy decoding, B={kv['batch']}, model {kv['model']}"
        )
        lines += [_kv_line(row) for row in kv["rows"]]
    return "\n".join(lines)


def load_results(path: str | Path | None = None) -> dict:
    """A results file written by this command (default: the committed CPU run)."""
    return json.loads(Path(path or DEFAULT_RESULTS).read_text(encoding="utf-8"))
