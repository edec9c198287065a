"""The checker in Simplified Chinese (see ``lang``): each finding's meaning
and fix, and each English template the checker prints, with its Chinese.

The words are the site's (i18n/terms.zh.yml): 注意力分数, 掩码, 词元, 注意力头,
填充, 因果掩码; a finding is a 发现项. Code, shapes, option names and finding ids
stay as they are, and so do the phrases that the site's pages and scripts look
for, in parentheses after the Chinese: "未发现错误（no mistakes found）",
"did not return within 1 s". A Chinese template has the English one's fields.

Each text is one line, so that searching for an English message finds its
Chinese; hence the long lines.
"""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

FINDINGS = {  # id: (meaning, fix)
    "missing-scale": ("注意力分数 q·kᵀ 没有按 1/sqrt(Dk) 缩放", "把注意力分数乘以 1 / math.sqrt(q.size(-1))"),
    "wrong-scale": ("注意力分数缩放了，但缩放因子不对", "按 1/sqrt(Dh) 缩放，Dh 是每个点积的长度（即注意力头内部的 q.size(-1)），不是模型宽度"),
    "softmax-dim": ("softmax 作用在了错误的维度上", "沿键做 softmax：取注意力分数 (..., L, S) 的 dim=-1"),
    "wrong-transpose": ("键转置的轴不对", "只交换最后两个轴：k.transpose(-2, -1)（或 k.mT）"),
    "mask-inverted": ("代码对掩码的理解与给定的约定正好相反", "在代码用到掩码的地方把它取反（~mask），或者传入与代码含义一致的 --mask-convention"),
    "mask-ignored": ("掩码对输出没有任何影响", "在 softmax 之前填充被禁止的注意力分数：scores = scores.masked_fill(~allowed, float('-inf'))"),
    "nan-fully-masked": ("没有任何可用键的查询得到了 NaN", "softmax 之后把这样的行的权重置零（用 torch.nan_to_num，或者按 allowed.any(-1) 用 torch.where），和 F.scaled_dot_product_attention 一样"),
    "fully-masked-uniform": ("-1e9 这样的有限填充值让整行被屏蔽的查询得到均匀的权重，而 F.scaled_dot_product_attention 给出的是零", "用 float('-inf') 填充，再把没有可用键的行置零"),
    "causal-top-left": ("因果三角按左上对齐，所以查询比键少（L < S）时，每个查询都会漏掉最新的几个键", "改成右下对齐：torch.ones(L, S).tril(diagonal=S - L)，也就是 causal_mask(L, S)"),
    "dropout-in-eval": ("eval() 下 Dropout 仍然生效：两次完全相同的调用，结果不同", "只在训练时使用 Dropout：F.dropout(w, p, training=self.training)，或者用 nn.Dropout 模块"),
    "future-leak": ("在因果掩码下，某个输出依赖于后面的词元", "确保带掩码的注意力之后，没有别的运算再把各个位置混在一起"),
    "batch-mixing": ("一个批次里的样本相互影响", "让批次维保持独立（nn.MultiheadAttention(..., batch_first=True)）；如果你的模块是序列维在前，就加上 --seq-first"),
    "head-split": ("注意力头沿错误的轴拆分或合并", "用 x.view(B, L, H, Dh).transpose(1, 2) 拆分，用 out.transpose(1, 2).reshape(B, L, D) 合并"),
    "weights-not-normalized": ("返回的权重每行之和不为 1", "在 softmax 之前施加掩码，并返回 softmax 的输出"),
    "shape": ("对合法的输入，输出的形状不对，或者代码报错", "函数对任意前导维度都返回 (..., L, Dv)，模块返回 (B, L, D)"),
    "rope-exponent": ("RoPE 的频率用错了指数，例如把 base ** (-2i/Dh) 写成了 base ** (-i/Dh)", "inv_freq = base ** (-torch.arange(0, Dh, 2) / Dh)：偶数特征下标 2i 除以 Dh"),
    "rope-base": ("RoPE 频率的形式正确，但底数不同", "使用模型的底数（用 --base B 说明你想要的是哪一个）"),
    "rope-positions-ignored": ("不管传入什么位置，RoPE 都按位置 i 的角度旋转第 i 行（这正是缓存解码中的偏移错误）", "用 positions 参数计算角度，而不是 torch.arange(L)"),
    "rope-layout-mix": ("RoPE 把一种配对布局的角度用在了另一种布局的特征对上，一对中的两个特征因此旋转了不同的角度", "rotate-half 配对用 torch.cat([f, f]) 的角度，交错配对用 f.repeat_interleave(2)"),
    "gqa-kv-head": ("查询头 h 读取的是键/值头 h % G，而不是 h // (H / G)", "原地重复每个键/值头：k.repeat_interleave(H // G, dim=1)，而不是 k.repeat(1, H // G, 1, 1)"),
    "decode-position-offset": ("用到缓存的一步给新词元的位置不对（位置从 0 重新开始，而不是接在缓存的词元之后）", "在位置 cache_length .. cache_length + L - 1 上旋转新词元"),
    "decode-rope-twice": ("缓存的键在后面的某一步又被旋转了一次：RoPE 作用在了整个缓存上，而不只是新的键", "新的键在进入缓存之前旋转一次；从缓存里取出的键不要再旋转"),
    "decode-causal-top-left": ("用到缓存的一步中，因果掩码按左上对齐：单个新查询只看到最老的那个缓存键", "改成右下对齐，即 causal_mask(L, S)；只有一个新查询时干脆不加掩码"),
    "decode-window": ("滑动窗口在缓存解码中差了一个：新词元看到的比 W 个少（缓存剪得太短）或多（留得太长）", "只保留最后 W 个键（包括新的那个），并按绝对位置给缓存的键加掩码"),
    "decode-cache-unbounded": ("有滑动窗口时，缓存却一直增长：每层本该最多保存 W 个位置", "把比窗口更早的键和值从缓存中删掉"),
    "unexplained": ("输出不对，而且没有哪个已知错误能解释它", "在列出的形状上，把你的代码和 F.scaled_dot_product_attention 逐步对比"),
}

MESSAGES = {  # English template: Chinese template
    # the report (findings.py)
    "FINDING {id}: {message} — {fix} (see {link})": "FINDING {id}: {message} — {fix}。详见 {link}",
    "    symptom: {symptom}": "    症状：{symptom}",
    "how: {how}": "判定依据：{how}",
    "note: {note}": "注：{note}",
    "VERDICT: {target}: no mistakes found ({n} checks passed)":
        "结论：{target}：未发现错误（no mistakes found），{n} 项检查全部通过",
    "VERDICT: {target}: 1 mistake found ({ids})": "结论：{target}：发现 1 个错误（{ids}）",
    "VERDICT: {target}: {n} mistakes found ({ids})": "结论：{target}：发现 {n} 个错误（{ids}）",

    # the command line (cli.py)
    "usage: ": "用法： ",  # as wide as 'usage: ', so that the usage lines stay aligned
    "positional arguments": "位置参数",
    "options": "选项",
    "show this help message and exit": "显示这条帮助信息并退出",
    "finding ids: {ids}": "发现项 id：{ids}",
    "FILE.py:NAME, e.g. my_attention.py:attention": "FILE.py:NAME，例如 my_attention.py:attention",
    "NAME builds an nn.Module as NAME(d_model, num_heads): a class, or a one-line factory function":
        "NAME 是一个类或一行的工厂函数，以 NAME(d_model, num_heads) 构建一个 nn.Module",
    "what True means in a mask: allow = may attend (as F.scaled_dot_product_attention), block = not allowed (as nn.MultiheadAttention), auto = find it from behaviour (default)":
        "掩码里 True 的含义：allow = 可以关注（和 F.scaled_dot_product_attention 一样），block = 不允许关注（和 nn.MultiheadAttention 一样），auto = 根据行为判断（默认）",
    "the module takes x as (L, B, D) instead of (B, L, D)": "模块接收的 x 是 (L, B, D)，而不是 (B, L, D)",
    "where to run (default: cuda if available, else cpu)": "在哪里运行（默认：有 cuda 就用 cuda，否则用 cpu）",
    "NAME is rope(x, positions): rotary position embedding": "NAME 是 rope(x, positions)：旋转位置编码",
    "with --rope: the frequency base meant (default 10000)": "配合 --rope：期望的频率底数（默认 10000）",
    "NAME is attention(q, k, v, mask=None) with q (B, H, L, Dh) and k, v (B, G, S, Dh): grouped-query attention":
        "NAME 是 attention(q, k, v, mask=None)，q 为 (B, H, L, Dh)，k、v 为 (B, G, S, Dh)：分组查询注意力",
    "NAME is decode(tokens, cache) -> (out, cache): cached decoding, compared with a full recompute at every step":
        "NAME 是 decode(tokens, cache) -> (out, cache)：缓存解码，每一步都与完整重算对比",
    "with --decode: the sliding window W the model is meant to have": "配合 --decode：模型应有的滑动窗口 W",
    "how long one call of your code may take (default 10)": "你的代码每次调用最多可用的秒数（默认 10）",
    "print the report as JSON": "以 JSON 格式打印报告",
    "the language of the report: en (default) or zh; without --lang, the environment variable ATTENTION_CHECK_LANG; never the locale":
        "报告的语言：en（默认）或 zh；没有 --lang 时读取环境变量 ATTENTION_CHECK_LANG；与系统的区域设置（locale）无关",
    "error: {message} (see --help)": "错误：{message}（见 --help）",
    "error: {error}": "错误：{error}",
    "error: the checker could not check {target}: {error}": "错误：检查器无法检查 {target}：{error}",
    "{name} is an object of type {kind}, not a function or a class":
        "{name} 是一个 {kind} 类型的对象，不是函数，也不是类",
    "none": "无",
    "pick one of --module, --rope, --gqa, --decode (given: {given}); --base goes with --rope, --window with --decode":
        "--module、--rope、--gqa、--decode 只能选一个（给出的是：{given}）；--base 配合 --rope 使用，--window 配合 --decode 使用",
    "--base applies to --rope only": "--base 只能配合 --rope 使用",
    "--window applies to --decode only": "--window 只能配合 --decode 使用",
    "--seq-first applies to --module only": "--seq-first 只能配合 --module 使用",

    # loading the file and checking the options (loader.py, running.py)
    "file not found: {path}": "找不到文件：{path}",
    "not a Python file: {path}": "不是 Python 文件：{path}",
    "expected FILE.py:NAME, for example my_attention.py:attention, got {spec!r}":
        "应为 FILE.py:NAME，例如 my_attention.py:attention，收到的是 {spec!r}",
    "importing {path}": "导入 {path}",
    "could not import {path}: {error}": "无法导入 {path}：{error}",
    "could not import {path}{line}: {error}: {first}": "无法导入 {path}{line}：{error}: {first}",
    " (line {line})": "（第 {line} 行）",
    "{path} has no name {name!r}{hint}": "{path} 中没有名字 {name!r}{hint}",
    "; it defines {names}": "；它定义了 {names}",
    "mask_convention must be one of {choices}, got {value!r}":
        "mask_convention 必须是 {choices} 之一，收到的是 {value!r}",
    "device {device!r} cannot be used: {error}": "无法使用设备 {device!r}：{error}",
    "fn must be callable, got {type}": "fn 必须是可调用对象，收到的是 {type}",
    "{name} is a class: check a module with --module (check_module)":
        "{name} 是一个类：检查模块要加 --module（check_module）",
    "{name}{sig} cannot be called as {name}(q, k, v, mask=None)":
        "{name}{sig} 不能以 {name}(q, k, v, mask=None) 的方式调用",
    "{name} is a class, not an nn.Module subclass; check a function without --module (check_function)":
        "{name} 是一个类，但不是 nn.Module 的子类；检查函数时不要加 --module（check_function）",
    "{name}{sig} is a function that cannot build an nn.Module as {name}(d_model, num_heads); check a function without --module (check_function)":
        "{name}{sig} 是一个函数，不能以 {name}(d_model, num_heads) 的方式构建 nn.Module；检查函数时不要加 --module（check_function）",
    "{name}{sig} cannot be called as {name}(d_model, num_heads); write a one-line factory, def build(d_model, num_heads): return {name}(...), and check FILE.py:build":
        "{name}{sig} 不能以 {name}(d_model, num_heads) 的方式调用；写一个一行的工厂函数 def build(d_model, num_heads): return {name}(...)，然后检查 FILE.py:build",
    "{what} did not return within {limit:g} s (the time limit per call)":
        "{what}在 {limit:g} 秒内没有返回（did not return within {limit:g} s），超过了单次调用的时间上限",
    "the call": "这次调用",

    # a function (function.py, explain.py, variants.py)
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
    "the code treats True as blocked": "代码把 True 当成了“禁止关注”",
    "the mask does not change the output": "掩码不改变输出",
    "the mask is applied after the softmax, so the rows of the weights no longer sum to 1":
        "掩码在 softmax 之后才施加，所以权重每行之和不再是 1",
    "a fully masked row gets NaN": "整行被屏蔽的查询得到了 NaN",
    "a fully masked row gets uniform weights (a finite fill such as -1e9), where F.scaled_dot_product_attention gives zeros":
        "整行被屏蔽的查询得到了均匀的权重（用了 -1e9 这样的有限填充值），而 F.scaled_dot_product_attention 给出的是零",
    "is_causal=True builds a top-left triangle": "is_causal=True 构造的是左上对齐的三角",
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
    "a top-left causal triangle": "左上对齐的因果三角",
    "no causal mask": "没有因果掩码",

    # a module: calling it (probe.py, module.py)
    "{name}.forward{sig} cannot be called as forward(x), forward(x, mask), forward(q, k, v) or forward(q, k, v, mask)":
        "{name}.forward{sig} 不能以 forward(x)、forward(x, mask)、forward(q, k, v) 或 forward(q, k, v, mask) 的方式调用",
    "{name} could not be called; tried {tried}": "无法调用 {name}；试过 {tried}",
    "{name}.{call} with x {shape}": "{name}.{call}（x 为 {shape}）",
    "{name}.{call} with x {shape} and a mask {mask}": "{name}.{call}（x 为 {shape}，掩码为 {mask}）",
    "raises {error}": "抛出 {error}",
    "returns a {kind}, not a tensor": "返回的是 {kind}，不是张量",
    "returns a {got} tensor on {device} for x {want} on {x_device}":
        "对 {x_device} 上的 {want} 类型 x 返回了 {device} 上的 {got} 张量",
    "returns shape {got} for x {shape}, expected {shape}": "对 x {shape} 返回了形状 {got}，应为 {shape}",
    "cannot take this mask as {masks}": "无法以{masks}的形式接收这个掩码",
    "masks as {layout}": "以{layout}形式给出的掩码",
    "masks {shapes}, {encoding}": "掩码 {shapes}，{encoding}",
    "(B, S) key padding": "(B, S) 键填充",
    "(B,) valid lengths": "(B,) 有效长度",
    "bool, True = may attend": "bool，True = 可以关注",
    "bool, True = blocked": "bool，True = 禁止关注",
    "float, added to the scores (0 or -inf)": "float，加到注意力分数上（0 或 -inf）",
    "{call} raised {error}": "{call} 抛出了 {error}",
    "{call} returned a {type}, not an nn.Module; check a function without --module (check_function)":
        "{call} 返回的是 {type}，不是 nn.Module；检查函数时不要加 --module（check_function）",
    "x {shape} (B, L, D), {H} heads": "x {shape} (B, L, D)、{H} 个注意力头",
    "{call} {error} on {shape}": "{call}{error}（{shape}）",
    "the other checks need an output": "其余检查都需要一个输出",
    "checked on {shape}, by gradients and by its attention": "在{shape}上检查，依据是梯度和它的注意力计算",
    "called as {call}": "以 {call} 调用",
    "causal built in": "内置因果掩码",
    "bidirectional": "双向",
    "neither causal nor bidirectional": "既不是因果的，也不是双向的",
    "cross-attention through {word}": "通过 {word} 做交叉注意力",
    "k and v": "k 和 v",
    "no mask argument": "没有掩码参数",
    "{masks} (found from behaviour)": "{masks}（根据行为判断）",
    "no mask layout was respected; checked with bool masks, True = {meaning}":
        "模块不遵守任何一种掩码布局；改用 bool 掩码检查，True = {meaning}",
    "its {mask} argument raised with every mask layout offered ({layouts}): a layout of its own, so it was checked without masks":
        "它的 {mask} 参数对提供的每一种掩码布局（{layouts}）都报错：它有自己的布局，因此不带掩码检查",

    # a module: what was checked (module.py, sites.py)
    "eval() is deterministic": "eval() 下输出是确定的",
    "the output has the shape of x": "输出的形状和 x 相同",
    "the examples of a batch stay apart (by gradient)": "批次里的样本互不影响（按梯度检查）",
    "every token sees the others (by gradient)": "每个词元都能看到其他词元（按梯度检查）",
    "every token sees the earlier ones (by gradient)": "每个词元都能看到它之前的词元（按梯度检查）",
    "permuting the tokens permutes the outputs": "打乱词元的顺序，输出也按同样的方式打乱",
    "a prefix run alone gives the same outputs": "单独运行一个前缀，输出不变",
    "no output depends on a later token under a causal mask (by gradient)":
        "在因果掩码下，没有输出依赖于后面的词元（按梯度检查）",
    "a (B, 1, L, L) mask gives what the same (L, L) mask gives": "(B, 1, L, L) 掩码和同样的 (L, L) 掩码结果相同",
    "padding leaves the real tokens' outputs unchanged": "填充不改变真实词元的输出",
    "a query with no allowed key gets no weight": "没有可用键的查询，权重全为零",
    "the rows of returned weights sum to 1": "返回的权重每行之和为 1",
    "with a context, each output uses its own query only": "给定上下文时，每个输出只用到它自己的查询",
    "the scores are scaled by 1/sqrt(head width)": "注意力分数按 1/sqrt(头宽度) 缩放",
    "the softmax runs over the keys": "softmax 沿键计算",
    "each query and key row comes from its own token, each output token from its own position of every head":
        "查询和键的每一行都来自它自己的词元，每个输出词元都来自各注意力头中它自己的位置",
    "the heads read separate features": "各注意力头读取互不重叠的特征",

    # a module: what went wrong (module.py, masking.py, sites.py, resolve.py)
    "in eval(), two forward passes on the same x {shape} differ by up to {gap:.3g}; the other checks ran with dropout switched off":
        "eval() 下，对同一个 x {shape} 做两次前向传播，结果相差最多 {gap:.3g}；其余检查是在关闭 Dropout 后运行的",
    "the output of sequence 0 depends on sequence 1": "序列 0 的输出依赖于序列 1",
    "rows sum to {low:.3g}..{high:.3g}": "每行之和为 {low:.3g}..{high:.3g}",
    "without a mask the weights' {issue}": "不加掩码时，权重{issue}",
    "under {what} the weights' {issue}": "在{what}下，权重{issue}",
    "permuting the tokens does not permute the outputs the same way": "打乱词元的顺序后，输出没有按同样的方式打乱",
    "the first {n} tokens run alone give other outputs than the same tokens at the start of the whole sequence":
        "前 {n} 个词元单独运行时的输出，与它们位于完整序列开头时的输出不同",
    "with no mask argument, output {i} depends on the later token {j}, but output {k} not on the later token {m}: neither causal nor bidirectional":
        "没有掩码参数时，输出 {i} 依赖于后面的词元 {j}，输出 {k} 却不依赖于后面的词元 {m}：既不是因果的，也不是双向的",
    "without a mask, no token sees another token": "不加掩码时，没有哪个词元能看到别的词元",
    "without a mask, output {i} ignores token {j}": "不加掩码时，输出 {i} 忽略了词元 {j}",
    "a context {shape} (B, S, D)": "上下文 {shape} (B, S, D)",
    "cross-attention was not checked: it {error} with {shape}": "没有检查交叉注意力：传入{shape}时，它{error}",
    "with {shape}, output {i} depends on query token {j}": "传入{shape}时，输出 {i} 依赖于查询词元 {j}",
    "with {shape}, the output does not depend on it": "传入{shape}时，输出不依赖于它",
    "a causal mask": "因果掩码",
    "a mask on earlier tokens": "只允许关注更早词元的掩码",
    "a mask allowing tokens i-1 and i": "允许关注词元 i-1 和 i 的掩码",
    "{what} was not checked: the module takes {masks} only, which cannot say it":
        "没有检查{what}：这个模块只接受{masks}，表达不了它",
    "{error} with {what} {layout}": "{error}（{what}，布局为 {layout}）",
    "{error} with a mask {layout}": "{error}（掩码布局为 {layout}）",
    "{error} with a padding mask {layout}": "{error}（填充掩码，布局为 {layout}）",
    "{error} on x (1, {n}, {D})": "{error}（x 为 (1, {n}, {D})）",
    "a {other} mask gives other outputs than the same mask {layout}":
        "{other} 掩码给出的输出，与同一个掩码写成 {layout} 时不同",
    "{what} does not change the output": "{what}不改变输出",
    "with {what} each query sees only the tokens it may not: the code treats True as {meaning}":
        "使用{what}时，每个查询只看到它不该看的词元：代码把 True 当成了“{meaning}”",
    "under {what} output {i} depends on token {j}": "在{what}下，输出 {i} 依赖于词元 {j}",
    "padding was not checked: the module takes (L, S) masks only, the same for every example":
        "没有检查填充：这个模块只接受 (L, S) 掩码，每个样本的掩码都一样",
    "with a padding mask, the real tokens of sequence {b} differ by {gap:.3g} from the sequence run alone":
        "加上填充掩码后，序列 {b} 的真实词元与单独运行这个序列时相差 {gap:.3g}",
    "a query with no allowed key was not checked: with a mask added to the scores, what it gets depends on the fill the caller picks (-inf gives NaN, torch.finfo(dtype).min uniform weights)":
        "没有检查没有可用键的查询：掩码是加到注意力分数上的，这样的查询得到什么，取决于调用者选的填充值（-inf 得到 NaN，torch.finfo(dtype).min 得到均匀权重）",
    "a query with no allowed key was not checked: the module takes {layout} masks only, which cannot say it":
        "没有检查没有可用键的查询：这个模块只接受 {layout} 掩码，表达不了这种情况",
    "the queries of sequence 1 with no allowed key (a (B, 1, L, L) mask)":
        "序列 1 中没有可用键的查询（(B, 1, L, L) 掩码）",
    "NaN in the output for {where}": "{where}的输出中出现了 NaN",
    "attention gives nonzero outputs to {where}: their weights are not zero":
        "注意力给{where}输出了非零值：它们的权重不为零",
    "uniform weights 1/{L} for {where}": "{where}得到了均匀权重 1/{L}",
    "the output for {where} depends on the input tokens; with zero weights it would not":
        "{where}的输出依赖于输入词元；如果权重为零，就不会这样",
    "the weights are the exp of the scores, never divided by their sum: their rows sum to {low:.3g}..{high:.3g}":
        "权重是注意力分数的 exp，从未除以它们的和：每行之和为 {low:.3g}..{high:.3g}",
    "no softmax or F.scaled_dot_product_attention call was visible (one inside nn.MultiheadAttention is not): the scale, softmax dim, head split and head independence were not checked":
        "看不到 softmax 或 F.scaled_dot_product_attention 调用（nn.MultiheadAttention 内部的调用是看不到的）：没有检查缩放因子、softmax 的维度、注意力头的拆分和各头之间的独立性",
    "the softmax runs over dim={dim} of scores with {ndim} dims": "softmax 作用在 {ndim} 维注意力分数的 dim={dim} 上",
    "the softmax runs over dim={dim} ({over}) of scores with {ndim} dims, whose keys are dim={keys}":
        "softmax 作用在 {ndim} 维注意力分数的 dim={dim}（{over}）上，而键在 dim={keys}",
    "the query axis": "查询轴",
    "it is NaN": "输出是 NaN",
    "with no mask argument, output {i} depends on the later token {j}, but output {k} not on the earlier token {m}: neither causal nor bidirectional":
        "没有掩码参数时，输出 {i} 依赖于之后的词元 {j}，输出 {k} 却不依赖于之前的词元 {m}：既不是因果的，也不是双向的",
    "it depends on every token": "输出依赖于每一个词元",
    "with no mask argument, each output depends on its own token and the later ones only, and output {i}, which has no later token, sees no key ({how}): the built-in causal triangle allows the keys it should block and blocks those it should allow":
        "没有掩码参数时，每个输出只依赖于它自己的词元和之后的词元，而输出 {i} 之后没有词元，看不到任何键（{how}）：内置的因果三角放行了本该屏蔽的键，屏蔽了本该放行的键",
    "the scores (dot products of {n} terms) are not scaled": "注意力分数（{n} 项的点积）没有缩放",
    "the scores are multiplied by {factor:.4g} = 1/sqrt({width:.4g}){what}, but each dot product has {n} terms: the scale is 1/sqrt({n})":
        "注意力分数乘以了 {factor:.4g} = 1/sqrt({width:.4g}){what}，但每个点积有 {n} 项：缩放因子应为 1/sqrt({n})",
    " (the model width)": "（模型宽度）",
    "the heads": "注意力头",
    "the batch": "批次",
    "another axis": "另一个轴",
    "attention runs over {axis} (size {B})": "注意力作用在{axis}上（大小为 {B}）",
    "attention runs over an axis of size {n} ({axis}), not over the {L} tokens":
        "注意力作用在大小为 {n} 的轴（{axis}）上，而不是 {L} 个词元上",
    "{name} {i} of the scores is built from input tokens {tokens}": "注意力分数中的{name} {i} 由输入词元 {tokens} 构成",
    "query": "查询",
    "key": "键",
    "output token {i} does not use position {i} of {head} output (it mixes positions {used} of the heads' outputs)":
        "输出词元 {i} 没有用到{head}输出中的位置 {i}（它混用的是各注意力头输出的位置 {used}）",
    "head {h}'s": "注意力头 {h} 的",
    "the heads'": "各注意力头的",
    "heads {a} and {b} both read {n} of the same projected features": "注意力头 {a} 和 {b} 读取了同样的 {n} 个投影特征",
    "{text}, and no known mistake explains it": "{text}，没有哪个已知错误能解释它",

    # RoPE (rope.py)
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

    # grouped-query attention (gqa.py)
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

    # cached decoding (decode.py)
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
    "steps 1 to {last} equal the full recompute; from step {first} on, the first where the new token should see W = {window} tokens (itself and the {before} before it), they do not (it sees fewer): {where}":
        "第 1 到 {last} 步都等于完整重算；从第 {first} 步起就不相等了，这是新词元本该看到 W = {window} 个词元（它自己和前面 {before} 个）的第一步（它看到的更少）：{where}",
    "steps 1 to {last} equal the full recompute, while the new token and the ones cached are at most W = {window}; from step {first} on, where they are {n}, they do not (it sees more than W): {where}":
        "新词元加上缓存的词元不超过 W = {window} 个时，第 1 到 {last} 步都等于完整重算；从第 {first} 步起（这时共有 {n} 个）就不相等了（它看到的多于 W 个）：{where}",
    "{where}; with only position 0 cached, a key rotated once or twice is the same, so the new token's own position is wrong":
        "{where}；缓存里只有位置 0 时，键旋转一次还是两次都一样，所以错的是新词元自己的位置",
    "{where}, and it depends on how many steps the cached keys spent in the cache (one step after a prefill of {last} tokens differs from the same step reached token by token): something is applied to the cached keys again at every step":
        "{where}，而且结果取决于缓存的键在缓存里待了多少步（预填充 {last} 个词元后走一步，和逐个词元走到同一步的结果不同）：每一步都对缓存的键重复施加了某种运算",
    "no tensors found in the cache: its size was not checked": "缓存里没有找到张量：没有检查它的大小",
    "cache: {at_window} tensor elements after {window} tokens, {at_end} after {n}":
        "缓存：{window} 个词元后有 {at_window} 个张量元素，{n} 个词元后有 {at_end} 个",
    "with window W = {window} the cache holds {at_window} tensor elements after {window} tokens and {at_end} after {n}: it keeps every token":
        "窗口 W = {window} 时，缓存在 {window} 个词元后有 {at_window} 个张量元素，{n} 个词元后有 {at_end} 个：它保留了每一个词元",
}

# --help's description (cli.DESCRIPTION in English)
DESCRIPTION = """\
检查你自己写的注意力代码，并指出错误。

函数 attention(q, k, v, mask=None) 接收 (..., L, Dh) 的张量。检查器在专门挑选的
输入上把它和 F.scaled_dot_product_attention 对比，每种已知错误都会在这些输入上
暴露出来；输出不对时，就用它所等于的那个已知错误算法来命名。模块（--module：
一个类，或者一个构建模块的函数，以 NAME(d_model, num_heads) 的方式调用）按它
接受的方式调用：forward(x)、forward(x, mask) 或 forward(q, k, v[, mask])，
掩码也用它接受的布局和编码；然后按行为检查（填充、因果泄漏、批次混合、等变性、
权重、eval() 下的确定性、注意力头的拆分、缩放）。没有掩码参数的模块，会被判断为
因果的或双向的。

解码器的组成部分：--rope 检查 rope(x, positions)（两种配对布局都可以）；
--gqa 检查 H 个查询头配 G 个键/值头的 attention(q, k, v, mask=None)；
--decode [--window W] 检查适配函数 decode(tokens, cache) -> (out, cache)，
每一步都与完整重算对比。

警告：它会导入并运行 FILE.py，和 `python FILE.py` 一样。只检查你信任的代码。

函数的掩码是 bool 类型的 (..., L, S)。退出状态：0 表示没有错误，1 表示发现了
错误，2 表示用法错误（找不到文件、名字或签名，或者某次调用没有在 --call-limit
内返回）。
"""

# argparse's own usage errors, which it writes in English: (pattern, Chinese)
ARGPARSE = [
    (r"^the following arguments are required: (.+)$", r"缺少必需的参数：\1"),
    (r"^unrecognized arguments: (.+)$", r"无法识别的参数：\1"),
    (r"^argument (\S+): invalid choice: (.+) \(choose from (.+)\)$", r"参数 \1 的取值 \2 无效（可选：\3）"),
    (r"^argument (\S+): expected one argument$", r"参数 \1 需要一个值"),
    (r"^argument (\S+): invalid (\w+) value: (.+)$", r"参数 \1 的值 \3 无效（应为 \2）"),
    (r"^argument (\S+): ignored explicit argument (.+)$", r"参数 \1 不接受值 \2"),
    (r"^ambiguous option: (\S+) could match (.+)$", r"选项 \1 有歧义，可能是 \2"),
]
# fmt: on
