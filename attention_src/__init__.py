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
from .scaled_dot_product import scaled_dot_product_attention
from .self_attention import SelfAttention
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
