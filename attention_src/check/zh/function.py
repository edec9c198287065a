"""The Chinese of the function check's messages (``check.function``). See ``attention_src.check.zh``."""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

MESSAGES = {  # English template: Chinese template
    # a function (function/__init__.py, cases.py, explain.py, variants.py)
    "{name} mask {shape}": "{name}掩码 {shape}",
    "padding": "填充",
    "causal": "因果",
    "random": "随机",
    "fully masked rows": "含整行屏蔽的",
    "returned {type}, expected a tensor or (output, weights)": "返回了 {type}，应为张量或 (output, weights)",
    "two calls with the same inputs differ by up to {gap:.3g} ({case}); the other checks ran with dropout switched off":
        "输入相同的两次调用相差最多 {gap:.3g}（{case}）；其余检查是在关闭 Dropout 后运行的",
    "it printed {n} lines while it was checked (captured, not shown)": "检查期间它打印了 {n} 行（已捕获，没有显示）",
    "may attend": "可以关注",
    "blocked": "禁止关注",
    "allowed": "允许关注",
    "mask convention found from behaviour: {found} (True = {meaning})":
        "根据行为判断出的掩码约定：{found}（True = {meaning}）",
    "float16 was not checked: not supported on {device}": "没有检查 float16：{device} 不支持",
    "the output equals F.scaled_dot_product_attention on {n} of {total} inputs":
        "在 {total} 个输入中的 {n} 个上，输出等于 F.scaled_dot_product_attention",
    "the output equals attention with {variant} on {n} of {total} inputs":
        "在 {total} 个输入中的 {n} 个上，输出等于这样的注意力：{variant}",
    "the scores are multiplied by {s:.4g} = 1/sqrt({x:.4g}){hint}, where F.scaled_dot_product_attention uses 1/sqrt({d}) = {right:.4g}":
        "注意力分数乘以了 {s:.4g} = 1/sqrt({x:.4g}){hint}，而 F.scaled_dot_product_attention 用的是 1/sqrt({d}) = {right:.4g}",
    " (no scale)": "（没有缩放）",
    " (1/Dk instead of 1/sqrt(Dk))": "（用了 1/Dk，而不是 1/sqrt(Dk)）",
    " (multiplied by sqrt(Dk) instead of divided)": "（乘以了 sqrt(Dk)，而不是除以它）",
    " (the value width Dv instead of Dk)": "（用了值的宽度 Dv，而不是 Dk）",
    "the key is transposed as {how}": "键的转置写成了 {how}",
    "k.T (all axes reversed)": "k.T（所有轴都反转了）",
    "k.reshape(..., Dk, S) (a reshape, not a transpose)": "k.reshape(..., Dk, S)（这是 reshape，不是转置）",
    "k itself (no transpose)": "k 本身（没有转置）",
    "the scores q·kᵀ are not scaled by 1/sqrt(Dk)": "注意力分数 q·kᵀ 没有按 1/sqrt(Dk) 缩放",
    "the softmax runs over dim={dim}, {over}": "softmax 作用在 dim={dim} 上，{over}",
    "the queries": "即沿查询归一化",
    "dim 1 (the heads of 4-D input)": "即 4 维输入中注意力头所在的维度",
    "the code treats True as may attend": "代码把 True 当成了“可以关注”",
    "the code treats True as blocked": "代码把 True 当成了“禁止关注”",
    "the mask does not change the output": "掩码不改变输出",
    "the mask is applied after the softmax, so the rows of the weights no longer sum to 1":
        "掩码在 softmax 之后才施加，所以权重每行之和不再是 1",
    "a fully masked row gets NaN": "整行被屏蔽的查询得到了 NaN",
    "a fully masked row gets uniform weights (a finite fill such as -1e9), where F.scaled_dot_product_attention gives zeros":
        "整行被屏蔽的查询得到了均匀的权重（用了 -1e9 这样的有限填充值），而 F.scaled_dot_product_attention 给出的是零",
    "is_causal=True builds a top-left triangle": "is_causal=True 构造的是左上角对齐的三角",
    "is_causal=True does not change the output": "is_causal=True 不改变输出",
    "{what}, {seen}": "{what}，{seen}",
    "seen on {first}": "见于{first}",
    " and {n} more inputs": " 以及另外 {n} 个输入",
    "raises {error} on {where}{more}": "在{where}{more}上抛出 {error}",
    "{rank}-D inputs were not checked: the function raised on {case}: {error}":
        "没有检查 {rank} 维输入：函数在{case}上抛出了 {error}",
    "returns {got} for {case}, expected {expected}": "对{case}返回了 {got}，应为 {expected}",
    "returns {dtype} for {case}": "对{case}返回了 {dtype}",
    "returns a tensor on {got} for {case} on {device}": "输入{case}在 {device} 上，返回的张量却在 {got} 上",
    "differs from F.scaled_dot_product_attention by up to {gap:.3g} on {case}":
        "在{case}上与 F.scaled_dot_product_attention 相差最多 {gap:.3g}",
    "the output divided by the output for v = 1 equals F.scaled_dot_product_attention: the weights have the right proportions, but their rows sum to {low:.3g}..{high:.3g}, not 1, {seen}":
        "输出除以 v = 1 时的输出，就等于 F.scaled_dot_product_attention：权重的比例是对的，但每行之和是 {low:.3g}..{high:.3g}，不是 1，{seen}",
    " (and {n} more)": "（另有 {n} 处）",
    "the output {differs}, and matches none of the known mistakes": "输出{differs}，并且不符合任何已知错误",
    "and on {n} more inputs": "另外 {n} 个输入上也是如此",
    "the returned weights' rows sum to {low:.3g}..{high:.3g}, not 1, seen on {case}":
        "返回的权重每行之和是 {low:.3g}..{high:.3g}，不是 1，见于{case}",
    "nothing changed": "没有改动",
    "key transposed as {how}": "键转置为 {how}",
    "no scale": "没有缩放",
    "another scale": "另一个缩放因子",
    "softmax over dim={dim}": "softmax 作用在 dim={dim} 上",
    "the mask inverted": "掩码取反",
    "no mask": "不用掩码",
    "the mask applied after the softmax": "在 softmax 之后施加掩码",
    "NaN for fully masked rows": "整行被屏蔽时得到 NaN",
    "a finite fill (uniform fully masked rows)": "有限的填充值（整行被屏蔽时权重均匀）",
    "a top-left causal triangle": "左上角对齐的因果三角",
    "no causal mask": "没有因果掩码",
}
# fmt: on
