"""Attention, from the ground up: the code the chapters build, one concept per module.

Shape legend: B batch, H heads, L query length, S key length, D model width,
Dh head width. Bool masks mean True = may attend.
"""

from .encoder import Encoder, EncoderLayer
from .feed_forward import FeedForward
from .masks import causal_mask, padding_mask
from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .plotting import figure_to_svg, plot_attention, plot_attention_grid
from .positional import PositionalEncoding, sinusoidal_positional_encoding
from .projections import PartnerAttention, partner_batch, train_partner_attention
from .scaled_dot_product import scaled_dot_product_attention
from .self_attention import SelfAttention
from .soft_lookup import AdditiveAttention, hard_lookup, soft_lookup
from .softmax import softmax

__all__ = [
    "softmax",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "SelfAttention",
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    "sinusoidal_positional_encoding",
    "PositionalEncoding",
    "FeedForward",
    "EncoderLayer",
    "Encoder",
    "plot_attention",
    "plot_attention_grid",
    "figure_to_svg",
    "hard_lookup",
    "soft_lookup",
    "AdditiveAttention",
    "partner_batch",
    "PartnerAttention",
    "train_partner_attention",
]

__version__ = "0.1.0"

from .scaling import (  # chapter 4: why divide by sqrt(d_k)
    random_dot_products,
    saturation_sweep,
    softmax_entropy,
    softmax_jacobian,
    softmax_jacobian_norm,
    variance_sweep,
)

__all__ += [
    "random_dot_products",
    "softmax_entropy",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "variance_sweep",
    "saturation_sweep",
]

from .decoder import (  # noqa: E402  (chapter 7: causal self-attention, a decoder-only LM)
    DecoderBlock,
    DecoderOnlyLM,
    copy_task_batch,
    train_copy_model,
)

__all__ += ["DecoderBlock", "DecoderOnlyLM", "copy_task_batch", "train_copy_model"]

from .seq2seq import (  # noqa: E402  (chapter 1: why attention, the Seq2Seq bottleneck)
    BOS,
    Seq2SeqAttentionGRU,
    Seq2SeqGRU,
    accuracy_by_length,
    accuracy_by_position,
    make_seq2seq_batch,
    run_seq2seq_experiment,
    shift_right,
    train_seq2seq,
)

__all__ += [
    "BOS",
    "make_seq2seq_batch",
    "shift_right",
    "Seq2SeqGRU",
    "Seq2SeqAttentionGRU",
    "train_seq2seq",
    "accuracy_by_length",
    "accuracy_by_position",
    "run_seq2seq_experiment",
]

from .efficient import FastMultiHeadAttention, tiled_attention  # noqa: E402  (efficient attention)

__all__ += ["tiled_attention", "FastMultiHeadAttention"]

from .positional import (  # noqa: E402  (chapter 8: positional encoding)
    IGNORE_INDEX,
    LearnedPositionalEmbedding,
    OneLayerTagger,
    previous_token_accuracy,
    previous_token_batch,
    run_tagger_experiment,
    sinusoidal_shift_matrix,
    train_tagger,
)

__all__ += [
    "sinusoidal_shift_matrix",
    "LearnedPositionalEmbedding",
    "IGNORE_INDEX",
    "previous_token_batch",
    "OneLayerTagger",
    "train_tagger",
    "previous_token_accuracy",
    "run_tagger_experiment",
]

from .kv_cache import (  # noqa: E402  (the KV cache and decoding)
    KVCache,
    cached_attention,
    count_kv_projections,
    forward_with_cache,
    generate_with_cache,
    kv_cache_bytes_per_token,
    measure_kv_cache,
)

__all__ += [
    "KVCache",
    "cached_attention",
    "forward_with_cache",
    "generate_with_cache",
    "count_kv_projections",
    "kv_cache_bytes_per_token",
    "measure_kv_cache",
]

from .tasks import (  # noqa: E402  (chapter 11: attention maps of trained models)
    TASKS,
    TaskBatch,
    TaskModel,
    argmax_match,
    expected_pattern,
    init_task_model,
    layer_input_dependence,
    load_task_model,
    permutation_batch,
    reversal_batch,
    rotate_batch,
    sorting_batch,
    task_batch,
    token_influence,
    train_task_model,
    weight_on_expected,
    zero_values,
)

__all__ += [
    "TASKS",
    "TaskBatch",
    "permutation_batch",
    "reversal_batch",
    "rotate_batch",
    "sorting_batch",
    "task_batch",
    "expected_pattern",
    "TaskModel",
    "init_task_model",
    "train_task_model",
    "load_task_model",
    "weight_on_expected",
    "argmax_match",
    "token_influence",
    "zero_values",
    "layer_input_dependence",
]

from .classifier import EncoderClassifier, order_task_batch  # noqa: E402  (chapter 10: the encoder)
from .training import (  # noqa: E402  (chapters 9-10: warm-up, clipping, training loop)
    train_loop,
    train_order_classifier,
    warmup_factor,
)

__all__ += [
    "EncoderClassifier",
    "order_task_batch",
    "warmup_factor",
    "train_loop",
    "train_order_classifier",
]
