"""The Chinese of the decoder pieces' messages (``check.decoder``). See ``attention_src.check.zh``."""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

MESSAGES = {  # English template: Chinese template
    # RoPE (decoder/rope.py, rotation.py)
    "base must be a number > 1, got {base!r}": "base 必须是大于 1 的数，收到的是 {base!r}",
    "{label}{sig} cannot be called as {label}(x, positions)": "{label}{sig} 不能以 {label}(x, positions) 的方式调用",
    "x {shape}, positions {positions}": "x {shape}，位置 {positions}",
    "x {shape}: every unit vector at every row": "x {shape}：每一行上的每个单位向量",
    "returned {type}, expected a tensor": "返回了 {type}，应为张量",
    "returned shape {got} for x {shape}": "对 x {shape} 返回了形状 {got}",
    "returned {dtype} on {device} for x {x_dtype} on {x_device}":
        "对 {x_device} 上的 {x_dtype} 类型 x 返回了 {device} 上的 {dtype}",
    "pairs found: {layout}": "找到的配对方式：{layout}",
    "(i, i + Dh/2), rotate-half (GPT-NeoX, transformers' Llama)":
        "(i, i + Dh/2), rotate-half，即前后两半配对（GPT-NeoX、transformers 的 Llama）",
    "(2i, 2i + 1), interleaved (RoFormer, Meta's Llama)":
        "(2i, 2i + 1), interleaved，即相邻交错配对（RoFormer、Meta 的 Llama）",
    "the rotation {label} applies at each of {L} positions, read from its output for the {n} unit vectors":
        "{label} 在 {L} 个位置上各自施加的旋转，从它对 {n} 个单位向量的输出中读出",
    "each unit vector turns as RoPE does, but the output for x {shape} is not the sum of those turns (it mixes positions, heads or examples)":
        "每个单位向量都像 RoPE 那样旋转，但 x {shape} 的输出不是这些旋转之和（它把位置、注意力头或样本混在了一起）",
    "the output is not a rotation of pairs of features (i, i + Dh/2) or (2i, 2i + 1) of x":
        "输出不是对 x 的特征对 (i, i + Dh/2) 或 (2i, 2i + 1) 的旋转",
    "pairs {pairs} found, but the lengths of x change (a rotation keeps them): cos and sin of different angles, or a scale":
        "找到了 {pairs} 配对，但 x 的长度变了（旋转不会改变长度）：cos 和 sin 用了不同的角度，或者多乘了一个缩放因子",
    "the angles are not position x frequency, for the positions given nor for 0 .. L-1":
        "旋转角不是“位置 × 频率”：按给定的位置不成立，按 0 .. L-1 也不成立",
    "given positions {positions}, row i turns by the angle of position i: the positions 0 .. L-1 are used instead":
        "给定位置 {positions}，第 i 行却按位置 i 的角度旋转：实际用的是位置 0 .. L-1",
    "the features turn in pairs {pairs}, but by the angles of the {layout} layout: the two features of a pair turn by different angles":
        "特征按 {pairs} 配对旋转，用的却是 {layout} 布局的角度：一对中的两个特征旋转的角度不同",
    "the pairs turn the other way (by -p theta_i): (a cos + b sin, b cos - a sin) instead of (a cos - b sin, b cos + a sin)":
        "特征对的旋转方向反了（转了 -p theta_i）：得到的是 (a cos + b sin, b cos - a sin)，而不是 (a cos - b sin, b cos + a sin)",
    "the frequencies ({shown}, ...) do not follow b ** (-2i / Dh) for any base b":
        "频率 ({shown}, ...) 对任何底数 b 都不符合 b ** (-2i / Dh)",
    "the frequencies are base ** (-{wrong}), not base ** (-2i/Dh) (as if the base were {fitted} instead of {base})":
        "频率是 base ** (-{wrong})，而不是 base ** (-2i/Dh)（相当于底数是 {fitted}，而不是 {base}）",
    "the frequencies follow base ** (-2i/Dh) with base {fitted}, not {base}":
        "频率符合 base ** (-2i/Dh)，但底数是 {fitted}，不是 {base}",

    # grouped-query attention (decoder/gqa.py)
    "{shapes}: {error}": "{shapes}：抛出 {error}",
    "{shapes}: returns {got}": "{shapes}：返回了 {got}",
    "G = {G}, no mask: equals F.scaled_dot_product_attention(..., enable_gqa=True) within {tol:g}":
        "G = {G}，不加掩码：与 F.scaled_dot_product_attention(..., enable_gqa=True) 相差不超过 {tol:g}",
    "G = {G}, no mask: differs from F.scaled_dot_product_attention(..., enable_gqa=True) by {gap:.2g}":
        "G = {G}，不加掩码：与 F.scaled_dot_product_attention(..., enable_gqa=True) 相差 {gap:.2g}",
    "with H = {H} query heads and G = {G} key/value heads ({shapes}), head h reads key/value head h % {G}: heads 0..{last} read {tiled}, not {right}":
        "H = {H} 个查询头、G = {G} 个键/值头时（{shapes}），查询头 h 读取的是键/值头 h % {G}：查询头 0..{last} 读取的是 {tiled}，而不是 {right}",
    "{shapes}: the output equals the function's own output for neither k.repeat_interleave(H // G, 1) nor k.repeat(1, H // G, 1, 1)":
        "{shapes}：输出既不等于函数自己在 k.repeat_interleave(H // G, 1) 下的输出，也不等于在 k.repeat(1, H // G, 1, 1) 下的输出",
    "grouped: {check}": "分组：{check}",
    "G = H: {how}; G < H: compared with its own output for key/value heads repeated in place and tiled":
        "G = H：{how}；G < H：与它自己在键/值头原地重复和整体平铺时的输出比较",

    # cached decoding (decoder/decode.py, stepping.py, causes.py)
    "{label}{sig} cannot be called as {label}(tokens, cache)": "{label}{sig} 不能以 {label}(tokens, cache) 的方式调用",
    "window must be an int >= 2, got {window!r}": "window 必须是 >= 2 的整数，收到的是 {window!r}",
    "tokens {shape}: token 0 read with cache=None": "tokens {shape}：以 cache=None 读入词元 0",
    "step {t}: token {t} after {t} cached, against decode(tokens[:, :{n}], None)":
        "第 {t} 步：缓存了 {t} 个词元后读入词元 {t}，与 decode(tokens[:, :{n}], None) 对比",
    "the cache stops growing after W = {window} tokens": "缓存在 W = {window} 个词元之后不再增长",
    "{what} of decode": "decode 的{what}",
    "the prefill of {n}": "{n} 个词元的预填充",
    "step {t}": "第 {t} 步",
    "the full recompute of {n}": "{n} 个词元的完整重算",
    "{what} raises {error}": "{what}抛出 {error}",
    "{what} returned {type}, not (out, cache)": "{what}返回了 {type}，不是 (out, cache)",
    "{what} returned out {got} for tokens {shape}, expected (B, T, ...)":
        "对 tokens {shape}，{what}返回的 out 是 {got}，应为 (B, T, ...)",
    "every one of {n} cached steps equals the full recompute": "{n} 个缓存步骤都等于完整重算",
    "step {t} (the token at position {t}, after {t} cached) differs from the full recompute by {gap:.3g}":
        "第 {t} 步（位置 {t} 上的词元，此前已缓存 {t} 个）与完整重算相差 {gap:.3g}",
    "{n} of {total} cached steps differ; {where}": "{total} 个缓存步骤中有 {n} 个不同；{where}",
    "{where}; at step 2 the output does not change when token 1 changes: the new query sees only the oldest cached key":
        "{where}；在第 2 步，词元 1 变了输出却不变：新的查询只看到最老的那个缓存键",
    "{where}; no known mistake explains it: {seen}": "{where}；没有哪个已知错误能解释它：{seen}",
    "the full recompute of one token after 1 or 2 copies of another is the same, so whether a step sees its own key was not told":
        "在 1 个或 2 个相同的词元之后再接一个别的词元，完整重算的输出相同，因此无法判断一步是否看到了它自己的键",
    "after 1, 2 and 3 copies of one token, one cached step with another changes with their number, as the recompute does":
        "在 1、2、3 个相同的词元之后，用到缓存的一步读入另一个词元，输出随相同词元的个数变化，和完整重算一样",
    "{where}; after a prefill of 1, 2 or 3 copies of one token, one cached step with another token gives the same output each time, while the full recompute's changes (by {gap:.3g} from 1 copy to 2): the new token attends over the cached values, all alike, and not over its own key and value":
        "{where}；预填充 1、2 或 3 个相同的词元后，用到缓存的一步读入另一个词元，每次输出都一样，而完整重算的输出会变（从 1 个到 2 个相差 {gap:.3g}）：新词元只对缓存里的值（全都一样）做注意力，没有用到它自己的键和值",
    "each step depends on tokens 0 and 1 exactly when the full recompute does (each changed in turn)":
        "每一步是否依赖词元 0 和词元 1，都和完整重算一致（分别改动这两个词元得出）",
    "at step {t} the output changes when token {j} changes and the full recompute's does not (if the model has a sliding window, --window W says so)":
        "第 {t} 步的输出随词元 {j} 的改动而变化，完整重算的输出却不变（如果模型有滑动窗口，用 --window W 告诉检查器）",
    "at step {t} the output does not change when token {j} changes and the full recompute's does (if the model has a sliding window, --window W says so)":
        "第 {t} 步的输出不随词元 {j} 的改动而变化，完整重算的输出却会变（如果模型有滑动窗口，用 --window W 告诉检查器）",
    "{where}; at step {t} the new token's output changes when token {j} changes, and the full recompute's does not: it sees more than the window of W = {window} lets it":
        "{where}；第 {t} 步新词元的输出随词元 {j} 的改动而变化，完整重算的输出却不变：它看到的比窗口 W = {window} 允许的多",
    "{where}; at step {t} the new token's output does not change when token {j} changes, and the full recompute's does: it sees fewer tokens than the window of W = {window}":
        "{where}；第 {t} 步新词元的输出不随词元 {j} 的改动而变化，完整重算的输出却会变：它看到的词元比窗口 W = {window} 少",
    "{where}; one step after a prefill of one token equals the full recompute, one step after a prefill of two tokens does not: the step changes the cached keys, except the one at position 0, which a rotation leaves as it is; the keys are rotated again":
        "{where}；预填充 1 个词元后走一步，与完整重算一致，预填充 2 个词元后走一步却不一致：这一步改动了缓存的键，只有位置 0 上的键没变，而旋转恰好不会改变位置 0 上的键：键又被旋转了一次",
    "right": "正确",
    "wrong": "错误",
    "one step after a prefill of one token is {first}, after two tokens {second}":
        "预填充 1 个词元后走一步的结果{first}，预填充 2 个词元后{second}",
    "{where}; one step after a prefill of one token already differs, though its one cached key sits at position 0, which a rotation leaves as it is, and the step reads the tokens the recompute reads: what is left is the new token's own position":
        "{where}；预填充 1 个词元后走一步就已经不同，而这时唯一的缓存键在位置 0 上，旋转不会改变它，这一步读取的词元也和完整重算相同：剩下的只能是新词元自己的位置",
    "with the window full of one token, one step after a prefill of {low} to {high} tokens gives the same output":
        "窗口里全是同一个词元时，预填充 {low} 到 {high} 个词元后走一步，输出都相同",
    "{where}; with the window of W = {window} full of one token, one step with another token after a prefill of {n1} tokens and after {n2} gives different outputs, where the full recompute gives the same: the new token's position is counted wrongly (from the length of a trimmed cache, say)":
        "{where}；窗口 W = {window} 里全是同一个词元时，分别预填充 {n1} 个和 {n2} 个词元，再用另一个词元走一步，输出不同，而完整重算的输出相同：新词元的位置算错了（例如取自裁剪后缓存的长度）",
    "no tensors found in the cache: its size was not checked": "缓存里没有找到张量：没有检查它的大小",
    "cache: {at_window} tensor elements after {window} tokens, {at_end} after {n}":
        "缓存：{window} 个词元后有 {at_window} 个张量元素，{n} 个词元后有 {at_end} 个",
    "with window W = {window} the cache holds {at_window} tensor elements after {window} tokens and {at_end} after {n}: it keeps growing after the window is full":
        "窗口 W = {window} 时，缓存在 {window} 个词元后有 {at_window} 个张量元素，{n} 个词元后有 {at_end} 个：窗口满了以后它还在增长",
}
# fmt: on
