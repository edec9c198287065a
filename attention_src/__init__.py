"""Attention, from the ground up: the code the chapters build, one concept per
module.

The lessons are the modules at this level (``softmax``, ``masks``, ``multi_head``,
...), with ``validate`` (their input checks) and ``plotting``. The rooms beside
them: ``experiments`` (toy tasks, data and the tiny trainings), ``models``
(loaders of real pretrained models), ``machinery`` (the build's results cache and
source reader), ``check`` (a checker for a reader's own attention) and ``bench``
(the benchmark). Every public name below imports from ``attention_src`` itself.

Shape legend: B batch, H heads, L query length, S key length, D model width,
Dh head width. Bool masks mean True = may attend.
"""

from .alibi import alibi_bias, alibi_slopes, soft_cap
from .decoder import (
    CausalBlock,
    CausalLM,
    DecoderBlock,
    DecoderOnlyLM,
    forward_with_cache,
    generate_with_cache,
    greedy_decode,
)
from .efficient import FastMultiHeadAttention, tiled_attention
from .encoder import Encoder, EncoderLayer
from .encoder_decoder import DecoderLayer, EncoderDecoder
from .experiments.classifier import (
    PAD,
    TOKEN_A,
    TOKEN_B,
    EncoderClassifier,
    order_task_batch,
)
from .experiments.copy_task import (
    copy_task_batch,
    next_token_loss,
    train_copy_model,
)
from .experiments.partner import (
    partner_accuracy,
    partner_batch,
    partner_of,
    train_partner_attention,
)
from .experiments.position_schemes import (
    POSITION_SCHEMES,
    PositionTagger,
    offset_accuracy,
    offset_batch,
    run_position_experiment,
    tagger_attention,
    tagger_mask,
    train_position_tagger,
)
from .experiments.seq2seq_task import (
    accuracy_by_length,
    accuracy_by_position,
    make_seq2seq_batch,
    probe_final_state,
    run_seq2seq_experiment,
    teacher_forcing_loss,
    train_seq2seq,
)
from .experiments.tagger import (
    IGNORE_INDEX,
    OneLayerTagger,
    previous_token_accuracy,
    previous_token_batch,
    run_tagger_experiment,
    tagging_loss,
    train_tagger,
)
from .experiments.tasks import (
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
    task_loss,
    token_influence,
    train_task_model,
    weight_on_expected,
    zero_values,
)
from .experiments.training import (
    OPTIMIZERS,
    accuracy,
    classifier_loss,
    train,
    train_loop,
    train_order_classifier,
    warmup_factor,
)
from .feed_forward import FeedForward
from .gqa import GroupedQueryAttention, grouped_query_attention, repeat_kv
from .kv_cache import (
    KVCache,
    cache_start,
    cached_attention,
    count_kv_projections,
    kv_cache_bytes_per_token,
)
from .latent_attention import (
    MultiHeadLatentAttention,
    latent_attention,
    latent_cache_bytes_per_token,
)
from .masks import causal_mask, document_mask, padding_mask, prefix_lm_mask
from .models import load_minilm, load_smollm2
from .models.gguf_weights import (
    Q4_1_BLOCK_BYTES,
    SMOLLM2_SHA256,
    decode_q4_1,
    q4_1_block,
    read_smollm2,
    smollm2_path,
    unpermute_qk,
)
from .models.minilm import (
    MINILM_SHA256,
    BertEmbedding,
    MiniLM,
    MiniLMTokenizer,
    mean_pool,
    minilm_dir,
)
from .models.smollm2 import LlamaBlock, LlamaDecoder, SmolLM2Tokenizer
from .multi_head import MultiHeadAttention, merge_heads, split_heads
from .plotting import figure_to_svg, plot_attention, plot_attention_grid
from .positional import (
    LearnedPositionalEmbedding,
    PositionalEncoding,
    sinusoidal_positional_encoding,
    sinusoidal_shift_matrix,
)
from .projections import PROJECTIONS, PartnerAttention
from .rmsnorm import RMSNorm
from .rope import (
    RotaryEmbedding,
    apply_rope,
    rope_angles,
    rope_rotate,
    rotate_half,
    rotate_pairs,
)
from .scaled_dot_product import scaled_dot_product_attention
from .scaling import (
    random_dot_products,
    saturation_sweep,
    softmax_entropy,
    softmax_jacobian,
    softmax_jacobian_norm,
    variance_sweep,
)
from .self_attention import SelfAttention
from .seq2seq import BOS, Seq2SeqAttentionGRU, Seq2SeqGRU, shift_right
from .soft_lookup import AdditiveAttention, hard_lookup, soft_lookup
from .softmax import softmax
from .swiglu import SwiGLU
from .windows import banded_attention, receptive_field, sliding_window_mask

__all__ = [
    # chapter 1: Why attention: the Seq2Seq bottleneck
    "BOS",
    "make_seq2seq_batch",
    "shift_right",
    "Seq2SeqGRU",
    "Seq2SeqAttentionGRU",
    "train_seq2seq",
    "teacher_forcing_loss",
    "train",
    "OPTIMIZERS",
    "accuracy_by_length",
    "accuracy_by_position",
    "run_seq2seq_experiment",
    "probe_final_state",
    # chapter 2: Attention as a soft lookup
    "hard_lookup",
    "soft_lookup",
    "AdditiveAttention",
    # chapter 3: Where Q, K and V come from
    "SelfAttention",
    "PROJECTIONS",
    "partner_of",
    "partner_batch",
    "PartnerAttention",
    "partner_accuracy",
    "train_partner_attention",
    # chapter 4: Scaled dot-product attention
    "softmax",
    "scaled_dot_product_attention",
    # chapter 5: Why divide by √dₖ, and a stable softmax
    "random_dot_products",
    "softmax_entropy",
    "softmax_jacobian",
    "softmax_jacobian_norm",
    "variance_sweep",
    "saturation_sweep",
    # chapter 6: Masks
    "causal_mask",
    "padding_mask",
    # chapter 7: Multi-head attention
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    # chapter 8: Positional encoding
    "sinusoidal_positional_encoding",
    "PositionalEncoding",
    "sinusoidal_shift_matrix",
    "LearnedPositionalEmbedding",
    "IGNORE_INDEX",
    "previous_token_batch",
    "OneLayerTagger",
    "train_tagger",
    "tagging_loss",
    "previous_token_accuracy",
    "run_tagger_experiment",
    # chapter 9: The rest of the block: feed-forward, residuals, LayerNorm
    "FeedForward",
    # chapter 10: The encoder, assembled
    "EncoderLayer",
    "Encoder",
    "EncoderClassifier",
    "PAD",
    "TOKEN_A",
    "TOKEN_B",
    "order_task_batch",
    "accuracy",
    "classifier_loss",
    "train_loop",
    "train_order_classifier",
    # chapter 11: Training a deep stack
    "warmup_factor",
    # chapter 12: Causal self-attention
    "CausalBlock",
    "CausalLM",
    "copy_task_batch",
    "train_copy_model",
    "next_token_loss",
    # chapter 13: Attention maps of trained models
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
    "task_loss",
    "load_task_model",
    "weight_on_expected",
    "argmax_match",
    "token_influence",
    "zero_values",
    "layer_input_dependence",
    "plot_attention",
    "plot_attention_grid",
    "figure_to_svg",
    # chapter 14: The encoder–decoder Transformer
    "DecoderLayer",
    "EncoderDecoder",
    # chapter 15: FlashAttention's algorithm: tiles and an online softmax
    "tiled_attention",
    # chapter 16: What PyTorch runs, measured
    "FastMultiHeadAttention",
    # chapter 17: The KV cache and decoding
    "KVCache",
    "cached_attention",
    "cache_start",
    "DecoderBlock",
    "DecoderOnlyLM",
    "greedy_decode",
    "forward_with_cache",
    "generate_with_cache",
    "count_kv_projections",
    "kv_cache_bytes_per_token",
    # chapter 18: A real encoder: MiniLM reads a sentence
    "load_minilm",
    "MiniLM",
    "BertEmbedding",
    "MiniLMTokenizer",
    "mean_pool",
    "minilm_dir",
    "MINILM_SHA256",
    # chapter 19: Rotary position embedding
    "rope_angles",
    "rotate_half",
    "rotate_pairs",
    "rope_rotate",
    "apply_rope",
    "RotaryEmbedding",
    "POSITION_SCHEMES",
    "tagger_attention",
    "tagger_mask",
    "PositionTagger",
    "train_position_tagger",
    "offset_accuracy",
    "run_position_experiment",
    "offset_batch",
    # chapter 20: Sharing keys and values: MQA and GQA
    "repeat_kv",
    "grouped_query_attention",
    "GroupedQueryAttention",
    # chapter 21: Latent attention: DeepSeek's compressed cache
    "latent_attention",
    "MultiHeadLatentAttention",
    "latent_cache_bytes_per_token",
    # chapter 22: Windows and biases
    "sliding_window_mask",
    "banded_attention",
    "receptive_field",
    "alibi_slopes",
    "alibi_bias",
    # chapter 23: FlexAttention: your own mask and bias
    "prefix_lm_mask",
    "document_mask",
    "soft_cap",
    # chapter 24: A real decoder: SmolLM2-135M
    "RMSNorm",
    "SwiGLU",
    "load_smollm2",
    "LlamaDecoder",
    "LlamaBlock",
    "SmolLM2Tokenizer",
    "read_smollm2",
    "unpermute_qk",
    "Q4_1_BLOCK_BYTES",
    "q4_1_block",
    "decode_q4_1",
    "smollm2_path",
    "SMOLLM2_SHA256",
]

__version__ = "0.1.0"
