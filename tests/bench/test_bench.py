"""attention_src.bench: the benchmark's machinery at tiny sizes (never its timings)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from attention_src import bench

TINY = replace(
    bench.QUICK,
    sizes=(16, 40),
    module_sizes=(16,),
    autograd_sizes=(8,),
    memory_sizes=(32,),
    block_sweep_length=40,
    block_sizes=((8, 8), (16, 32)),
    reps=2,
    min_sample_s=0.0,
    heads=2,
    head_dim=8,
    matmul_n=64,
    kv_prompt_lens=(3, 5),
    kv_new_tokens=4,
    kv_d_model=16,
    kv_heads=2,
    kv_layers=1,
    kv_vocab=11,
    sections=("attention", "modules", "blocks", "kv_cache"),
    quiet_share=None,  # never wait for a quiet machine in the tests
)


def test_round_robin_interleaves_and_rotates():
    calls = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = bench.time_round_robin(fns, reps=3)
    assert {k: len(v) for k, v in times.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(t >= 0 for ts in times.values() for t in ts)
    # one warm-up call each, then every repetition starts with the next function
    assert calls == list("abc") + list("abc") + list("bca") + list("cab")


def test_round_robin_repeats_fast_calls_to_fill_a_sample():
    counts = {"f": 0}

    def f():
        counts["f"] += 1

    bench.time_round_robin({"f": f}, reps=2, min_sample_s=0.01)
    assert counts["f"] > 3  # far more than the 1 warm-up + 2 samples


def _fake_ticks(monkeypatch, others):
    """/proc/stat as if other processes used `others[i]` of the CPU in repetition i."""
    state = {"total": 0, "busy": 0, "calls": 0}
    shares = iter(others)

    def ticks():
        state["calls"] += 1
        if state["calls"] % 2 == 0:  # the snapshot after a repetition
            state["total"] += 1000
            state["busy"] += round(1000 * next(shares))
        return state["total"], state["busy"], 0

    monkeypatch.setattr(bench.timing, "_cpu_ticks", ticks)
    monkeypatch.setattr(bench.timing.time, "sleep", lambda s: None)


def test_round_robin_repeats_repetitions_disturbed_by_other_processes(monkeypatch):
    # rep ok; rep disturbed, wait: busy, quiet; rep ok; rep disturbed, wait: quiet; rep ok
    _fake_ticks(monkeypatch, [0.0, 0.5, 0.8, 0.0, 0.05, 0.9, 0.02, 0.0])
    report = {}
    times = bench.time_round_robin(
        {"f": lambda: None}, reps=3, quiet_share=0.1, max_wait_s=60, report=report
    )
    assert len(times["f"]) == 3
    assert report == {"rejected_reps": 2, "other_cpu_share": [0.0, 0.05, 0.0]}


def test_round_robin_keeps_disturbed_repetitions_once_the_wait_is_spent(monkeypatch):
    # rep disturbed; waiting 2 s windows, all busy, until the 5 s are spent; then kept as is
    _fake_ticks(monkeypatch, [0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    report = {}
    bench.time_round_robin(
        {"f": lambda: None}, reps=2, quiet_share=0.1, max_wait_s=5.0, report=report
    )
    assert report == {"rejected_reps": 1, "other_cpu_share": [0.5, 0.5]}


def test_round_robin_rejects_zero_reps():
    with pytest.raises(ValueError, match=r"reps must be >= 1, got 0"):
        bench.time_round_robin({"f": lambda: None}, reps=0)


def test_summarize_uses_paired_ratios():
    times = {"ref": [1.0, 2.0, 4.0], "x": [2.0, 2.0, 2.0]}
    s = bench.summarize(times, "ref")
    assert s["median_s"] == {"ref": 2.0, "x": 2.0}
    assert s["ratio"]["ref"] == 1.0
    assert s["ratio"]["x"] == 1.0  # median of 2, 1, 0.5 -- not 2.0 / 2.0 by luck
    times["x"] = [3.0, 2.0, 2.0]
    assert bench.summarize(times, "ref")["ratio"]["x"] == 1.0
    times["x"] = [3.0, 6.0, 2.0]
    assert bench.summarize(times, "ref")["ratio"]["x"] == 3.0


def test_attention_flops():
    assert bench.attention_flops(2, 3, 5, 7, 4) == 4 * 2 * 3 * 5 * 7 * 4
    assert bench.attention_flops(1, 1, 4, 4, 1, causal=True) == 4 * (1 + 2 + 3 + 4)
    assert bench.attention_flops(1, 1, 2, 5, 1, causal=True) == 4 * (4 + 5)  # bottom-right
    assert bench.attention_flops(1, 1, 5, 2, 1, causal=True) == 4 * (1 + 2)  # 3 rows see nothing


def test_tensor_memory_peak_counts_what_is_alive_at_once():
    def two_at_once():
        a = torch.zeros(1000)  # 4000 bytes
        b = torch.zeros(2000)  # 8000 bytes, while a is alive
        del a, b
        c = torch.zeros(2500)  # 10000 bytes, alone
        return c

    peak = bench.tensor_memory_peak(two_at_once)
    assert 12000 <= peak < 12000 + 1024
    assert bench.tensor_memory_peak(lambda: None) == 0


def test_run_writes_every_section_and_the_machine():
    results = bench.run(TINY, command="test")
    json.dumps(results)  # serialisable as it is
    assert results["command"] == "test" and results["schema"] == 1
    machine = results["machine"]
    assert machine["torch"] == torch.__version__
    assert machine["torch_num_threads"] == torch.get_num_threads()
    assert machine["cpu_count"] >= 1 and machine["cpu_model"]
    assert len(results["load_start"]) == 3 and len(results["load_end"]) == 3
    sections = results["sections"]
    assert set(sections) == {"matmul", "attention", "modules", "blocks", "kv_cache"}
    assert len(sections["matmul"]["gflops_before"]) == TINY.reps

    rows = sections["attention"]["rows"]
    assert [(r["L"], r["causal"]) for r in rows] == [
        (16, False), (16, True), (40, False), (40, True)
    ]  # fmt: skip
    for row in rows:
        assert set(row["median_s"]) == {"naive", "tiled", "sdpa"}  # the matmul kept apart
        assert set(row["matmul_fraction"]) == {"naive", "tiled", "sdpa"}
        assert row["matmul_gflops"] > 0 and all(f > 0 for f in row["matmul_fraction"].values())
        assert row["ratio"]["sdpa"] == 1.0
        assert all(len(ts) == TINY.reps for ts in row["times_s"].values())
        assert max(row["max_abs_diff"].values()) < 1e-4  # the three agree
        assert row["flops"] == bench.attention_flops(1, 2, row["L"], row["L"], 8, row["causal"])

    modules = sections["modules"]["rows"]
    assert [(r["mode"], r["L"]) for r in modules] == [("inference", 16), ("autograd", 8)]
    for row in modules:
        assert set(row["ratio"]) == {"nn", "fast", "ours"} and row["ratio"]["nn"] == 1.0
        assert max(row["max_abs_diff"].values()) < 1e-4

    blocks = sections["blocks"]
    assert [(r["block_size"], r["key_block_size"]) for r in blocks["rows"]] == [(8, 8), (16, 32)]

    kv = sections["kv_cache"]
    assert kv["model"]["d_model"] == 16 and kv["model"]["max_len"] >= 5 + 4
    assert [(r["prompt_len"], r["new_tokens"]) for r in kv["rows"]] == [(3, 4), (5, 4)]
    for row in kv["rows"]:
        assert row["identical"]
        assert set(row["times_s"]) == {"no_cache", "cache"}
        assert all(len(ts) == TINY.reps for ts in row["times_s"].values())
        assert row["speedup"] == row["ratio"]["no_cache"] and row["ratio"]["cache"] == 1.0

    table = bench.format_tables(results)
    assert "attention B=1 H=2 Dh=8" in table and "tiled_attention tile sizes at L = 40" in table
    assert "KV cache, greedy decoding" in table and "prompt     5 + 4 new" in table


def test_unknown_section_is_refused():
    with pytest.raises(ValueError, match=r"unknown sections \['kv'\]"):
        bench.run(replace(TINY, sections=("kv",)))


def test_sections_are_one_function_each():
    assert set(bench.SECTIONS) == {"attention", "modules", "blocks", "memory", "kv_cache"}
    assert all(callable(fn) for fn in bench.SECTIONS.values())


def test_main_writes_json(tmp_path, capsys):
    out = tmp_path / "r.json"
    bench.main(
        ["--sections", "attention", "--sizes", "8", "--reps", "1", "--heads", "1",
         "--head-dim", "4", "--matmul-n", "32", "--min-sample-s", "0", "--max-wait-s", "0",
         "--out", str(out)]
    )  # fmt: skip
    written = json.loads(out.read_text())
    assert written["command"].endswith(
        "python -m attention_src.bench --sections attention --sizes 8 --reps 1 --heads 1 "
        f"--head-dim 4 --matmul-n 32 --min-sample-s 0 --max-wait-s 0 --out {out}"
    )
    assert [r["L"] for r in written["sections"]["attention"]["rows"]] == [8, 8]
    printed = capsys.readouterr().out
    assert "L=    8" in printed and f"wrote {out}" in printed


def test_peak_memory_in_a_subprocess():
    row = bench.measure_peak_memory("naive", 256, replace(TINY, heads=2, head_dim=8))
    assert row["impl"] == "naive" and row["L"] == 256
    assert row["weights_bytes"] == 2 * 256 * 256 * 4
    assert row["peak_extra_bytes"] >= 0


def test_peak_memory_rejects_unknown_impl():
    with pytest.raises(ValueError, match=r"impl must be one of \['naive', 'sdpa', 'tiled'\]"):
        bench.peak_memory("flash", 16)


def test_measure_kv_cache_returns_plain_data():
    r = bench.measure_kv_cache(
        4, 3, d_model=16, num_heads=2, num_layers=1, vocab_size=11, repeats=2
    )
    assert r["identical"] is True
    assert len(r["times_no_cache_s"]) == len(r["times_cache_s"]) == 2
    assert r["speedup"] > 0 and r["median_cache_s"] > 0
    assert r["model"]["max_len"] >= 7
    # the speedup is the ratio of the printed minimums; the other two summaries
    # are computed from the same times
    assert r["min_s"]["cache"] == min(r["times_cache_s"])
    assert r["speedup"] == r["min_s"]["no_cache"] / r["min_s"]["cache"]
    assert r["ratio_of_medians"] == r["median_no_cache_s"] / r["median_cache_s"]
    assert r["median_of_ratios"] > 0 and r["repeats"] == 2
    with pytest.raises(ValueError, match="repeats"):
        bench.measure_kv_cache(4, 3, repeats=0)


def test_decoding_setup_is_seeded_and_sized(device):
    kw = dict(d_model=16, num_heads=2, num_layers=1, vocab_size=11, seed=3, device=device)
    model_a, prompt_a, kwargs = bench.decoding_setup(5, 4, batch_size=2, **kw)
    model_b, prompt_b, _ = bench.decoding_setup(5, 4, batch_size=2, **kw)
    assert prompt_a.shape == (2, 5) and prompt_a.device.type == torch.device(device).type
    assert torch.equal(prompt_a, prompt_b)  # same seed, same prompt and weights
    for a, b in zip(model_a.parameters(), model_b.parameters(), strict=True):
        assert torch.equal(a, b)
    assert not model_a.training
    assert kwargs["max_len"] >= 5 + 4 and kwargs["d_ff"] == 4 * 16
    other, _, _ = bench.decoding_setup(5, 4, **{**kw, "seed": 4})
    assert not torch.equal(other.head.weight, model_a.head.weight)
    with pytest.raises(ValueError, match="prompt_len"):
        bench.decoding_setup(0, 4)
    with pytest.raises(ValueError, match="new_tokens"):
        bench.decoding_setup(4, 0)


def test_committed_results_have_what_the_chapter_plots():
    if not bench.DEFAULT_RESULTS.exists():
        pytest.skip("no committed results yet")
    results = bench.load_results()
    assert results["machine"]["torch_num_threads"] >= 1
    sections = results["sections"]
    assert {"matmul", "attention", "modules", "memory", "blocks", "kv_cache"} <= set(sections)
    sizes = sorted({r["L"] for r in sections["attention"]["rows"]})
    assert sizes == [2**i for i in range(7, 14)]
    memory = {(r["impl"], r["L"]) for r in sections["memory"]["rows"]}
    assert memory == {(impl, L) for impl in bench.ATTENTION_IMPLS for L in sizes}
    kv = [(r["prompt_len"], r["new_tokens"]) for r in sections["kv_cache"]["rows"]]
    assert kv == [(16, 256), (512, 256)]  # the sizes the targets name
    assert all(r["identical"] for r in sections["kv_cache"]["rows"])
