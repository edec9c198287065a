"""The catalogue of what the checker can find: every finding kind, with its
stable id, a one-line meaning, the fix, and the chapter section that teaches
it (``findings`` has the findings of a check and its report)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SITE_URL", "Kind", "KINDS"]

SITE_URL = "https://attention-from-the-ground-up.github.io/"


@dataclass(frozen=True)
class Kind:
    """One finding id: what it means, how to fix it, where it is taught (in
    ``lang``: the Chinese edition's pages are under ``zh/``, at the same paths)."""

    id: str
    meaning: str
    fix: str
    page: str  # the docs path of the page, e.g. "chapters/pitfalls"
    anchor: str
    lang: str = "en"

    @property
    def link(self) -> str:
        edition = "" if self.lang == "en" else f"{self.lang}/"
        return f"{SITE_URL}{edition}{self.page}/#{self.anchor}"


_PITFALLS = "chapters/pitfalls"
_MASKS = "chapters/masks"
_PAGE = "chapters/check-your-attention"

KINDS = [
    Kind(
        "missing-scale",
        "the scores q·kᵀ are not scaled by 1/sqrt(Dk)",
        "multiply the scores by 1 / math.sqrt(q.size(-1))",
        _PITFALLS,
        "forgot-scaling",
    ),
    Kind(
        "wrong-scale",
        "the scores are scaled, but by the wrong factor",
        "scale by 1/sqrt(Dh), where Dh is the length of each dot product "
        "(q.size(-1) inside a head), not the model width",
        _PITFALLS,
        "wrong-scale",
    ),
    Kind(
        "softmax-dim",
        "the softmax runs over the wrong dimension",
        "take the softmax over the keys: dim=-1 of the scores (..., L, S)",
        _PITFALLS,
        "softmax-dim",
    ),
    Kind(
        "wrong-transpose",
        "the key is transposed along the wrong axes",
        "swap only the last two axes: k.transpose(-2, -1) (or k.mT)",
        _PITFALLS,
        "wrong-transpose",
    ),
    Kind(
        "mask-inverted",
        "the code reads the mask the opposite way from the convention given",
        "invert the mask where the code uses it (~mask), or pass the "
        "--mask-convention that your code means",
        _MASKS,
        "conventions",
    ),
    Kind(
        "mask-ignored",
        "the mask has no effect on the output",
        "fill the forbidden scores before the softmax: "
        "scores = scores.masked_fill(~allowed, float('-inf'))",
        _MASKS,
        "what-a-mask-does",
    ),
    Kind(
        "nan-fully-masked",
        "a query with no allowed key gets NaN",
        "give such rows zero weights after the softmax (torch.nan_to_num, or "
        "torch.where on allowed.any(-1)), as F.scaled_dot_product_attention "
        "does",
        _PITFALLS,
        "nan-fully-masked",
    ),
    Kind(
        "fully-masked-uniform",
        "a finite fill such as -1e9 gives a fully masked row uniform weights "
        "where F.scaled_dot_product_attention gives zeros",
        "fill with float('-inf') and zero the rows with no allowed key",
        _MASKS,
        "fully-masked",
    ),
    Kind(
        "causal-top-left",
        "the causal triangle is aligned top-left, so with fewer queries than "
        "keys (L < S) each query misses its most recent keys",
        "align it bottom-right: torch.ones(L, S).tril(diagonal=S - L), "
        "which is causal_mask(L, S)",
        _PITFALLS,
        "causal-top-left",
    ),
    Kind(
        "dropout-in-eval",
        "dropout is still active in eval(): two identical calls differ",
        "apply dropout only while training: "
        "F.dropout(w, p, training=self.training), or an nn.Dropout module",
        _PITFALLS,
        "dropout-eval",
    ),
    Kind(
        "future-leak",
        "under a causal mask an output depends on later tokens",
        "make sure nothing after the masked attention mixes positions",
        "chapters/causal-attention",
        "the-leak",
    ),
    Kind(
        "batch-mixing",
        "the examples of a batch influence each other",
        "keep the batch axis apart (nn.MultiheadAttention(..., "
        "batch_first=True)); if your module is sequence-first, pass "
        "--seq-first",
        _PITFALLS,
        "batch-first",
    ),
    Kind(
        "head-split",
        "the heads are split or merged along the wrong axes",
        "split with x.view(B, L, H, Dh).transpose(1, 2) and merge with "
        "out.transpose(1, 2).reshape(B, L, D)",
        _PITFALLS,
        "head-split",
    ),
    Kind(
        "weights-not-normalized",
        "the rows of the returned weights do not sum to 1",
        "mask the scores before the softmax, and return the softmax's output",
        _MASKS,
        "what-a-mask-does",
    ),
    Kind(
        "shape",
        "the output has the wrong shape, or the code raises, for a valid input",
        "return (..., L, Dv) from a function, for any leading dimensions, and "
        "(B, L, D) from a module",
        "chapters/scaled-dot-product-attention",
        "when-the-shapes-do-not-fit",
    ),
    Kind(
        "rope-exponent",
        "the RoPE frequencies use the wrong exponent, e.g. base ** (-i/Dh) "
        "for base ** (-2i/Dh)",
        "inv_freq = base ** (-torch.arange(0, Dh, 2) / Dh): the even feature "
        "indices 2i over Dh",
        _PAGE,
        "rope",
    ),
    Kind(
        "rope-base",
        "the RoPE frequencies have the right form with another base",
        "use the model's base (--base B says which one you mean)",
        _PAGE,
        "rope",
    ),
    Kind(
        "rope-positions-ignored",
        "RoPE turns row i by the angle of position i, whatever positions it "
        "is given (the offset bug of cached decoding)",
        "compute the angles from the positions argument, not torch.arange(L)",
        _PAGE,
        "rope",
    ),
    Kind(
        "rope-layout-mix",
        "RoPE applies the angles of one pairing layout to the pairs of the "
        "other, so the two features of a pair turn by different angles",
        "rotate-half pairs take torch.cat([f, f]) angles; interleaved pairs "
        "take f.repeat_interleave(2)",
        _PAGE,
        "rope",
    ),
    Kind(
        "gqa-kv-head",
        "query head h reads key/value head h % G instead of h // (H / G)",
        "repeat each key/value head in place: k.repeat_interleave(H // G, "
        "dim=1), not k.repeat(1, H // G, 1, 1)",
        _PAGE,
        "gqa",
    ),
    Kind(
        "decode-position-offset",
        "a cached decoding step gives its new tokens the wrong positions "
        "(positions restart at 0 instead of after the cached ones, or come "
        "from the length of a trimmed cache)",
        "rotate the new tokens at their absolute positions n .. n + T - 1, n "
        "the number of tokens read before them (not the length of a trimmed "
        "cache)",
        _PAGE,
        "decode",
    ),
    Kind(
        "decode-rope-twice",
        "cached keys are rotated again at a later step: RoPE applied to the "
        "whole cache instead of the new keys only",
        "rotate the new keys once, before they go into the cache; never "
        "rotate what comes out of it",
        _PAGE,
        "decode",
    ),
    Kind(
        "decode-attend-before-append",
        "a cached step attends before it appends its own key and value: the "
        "new token never sees itself (a cache read as [:pos] for [:pos + T] "
        "does the same)",
        "write the new keys and values into the cache first, then attend over "
        "all of it, the new ones included: cache[:pos + T]",
        _PAGE,
        "decode",
    ),
    Kind(
        "decode-causal-top-left",
        "a cached step's causal mask is aligned top-left: one new query sees "
        "only the oldest cached key",
        "align it bottom-right, causal_mask(L, S), or use no mask for one "
        "new query",
        _PAGE,
        "decode",
    ),
    Kind(
        "decode-window",
        "the sliding window is off by one in cached decoding: the new token "
        "sees fewer than W tokens (the cache trimmed too short) or more (kept "
        "too long)",
        "keep exactly the last W keys (the new one included) and mask the "
        "cached ones by their absolute positions",
        _PAGE,
        "decode",
    ),
    Kind(
        "decode-cache-unbounded",
        "with a sliding window the cache keeps growing: it should stop at W "
        "positions per layer",
        "drop the keys and values older than the window from the cache",
        _PAGE,
        "decode",
    ),
    Kind(
        "unexplained",
        "the output is wrong, and none of the known mistakes explains it",
        "compare your code with F.scaled_dot_product_attention step by step "
        "on the shapes listed",
        _PAGE,
        "how-it-decides",
    ),
]
