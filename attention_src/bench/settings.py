"""What one benchmark run measures: :class:`Settings` and its two presets,
:data:`FULL` and :data:`QUICK`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["Settings", "FULL", "QUICK"]

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Settings:
    """What one run measures. ``FULL`` and ``QUICK`` below are the two presets."""

    sizes: tuple[int, ...]  # L = S for the attention section
    module_sizes: tuple[int, ...]  # L for the modules section, inference mode
    autograd_sizes: tuple[int, ...]  # L for the modules section with autograd on
    memory_sizes: tuple[int, ...]  # L for the peak-memory subprocesses
    block_sweep_length: int  # L for the tile-size sweep
    block_sizes: tuple[tuple[int, int], ...]  # (block_size, key_block_size) pairs
    reps: int  # round-robin repetitions per comparison
    min_sample_s: float  # a timing sample repeats the call until it lasts this long
    batch: int = 1  # B
    heads: int = 8  # H
    head_dim: int = 64  # Dh (the modules use d_model = H * Dh)
    matmul_n: int = 2048  # the large matmul is (n, n) @ (n, n)
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    kv_prompt_lens: tuple[int, ...] = (16, 512)  # prompts for the KV-cache section
    kv_new_tokens: int = 256  # tokens generated after each prompt
    # the decoder the KV-cache section times (d_ff = 4 * d_model)
    kv_d_model: int = 256
    kv_heads: int = 4
    kv_layers: int = 4
    kv_vocab: int = 1000
    sections: tuple[str, ...] = (
        "attention",
        "modules",
        "blocks",
        "memory",
        "kv_cache",
    )
    # repeat a repetition if others used more CPU than this
    quiet_share: float | None = 0.1
    # ... but wait for a quiet machine at most this long per comparison
    max_wait_s: float = 1800.0


POWERS = tuple(2**i for i in range(7, 14))  # 128 ... 8192
FULL = Settings(
    sizes=POWERS,
    module_sizes=POWERS,
    autograd_sizes=POWERS[:-1],
    memory_sizes=POWERS,
    block_sweep_length=4096,
    block_sizes=(
        (64, 256),
        (128, 128),
        (128, 512),
        (128, 2048),
        (256, 256),
        (256, 1024),
    ),
    reps=7,
    min_sample_s=0.2,
)
QUICK = Settings(
    sizes=(128, 256, 512, 1024),
    module_sizes=(128, 512),
    autograd_sizes=(128,),
    memory_sizes=(256, 1024),
    block_sweep_length=512,
    block_sizes=((64, 256), (128, 512)),
    reps=3,
    min_sample_s=0.02,
    kv_prompt_lens=(16, 64),
    kv_new_tokens=32,
    max_wait_s=0.0,  # a first look: never wait for a quiet machine
)
