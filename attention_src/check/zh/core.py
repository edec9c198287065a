"""The Chinese of what every check shares: the findings' meanings and fixes, the
report, the command line (its help and argparse's own messages), loading the file and
running the code. See ``attention_src.check.zh``."""

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
    "causal-top-left": ("因果三角按左上角对齐，所以查询比键少（L < S）时，每个查询都会漏掉最新的几个键", "改成右下角对齐：torch.ones(L, S).tril(diagonal=S - L)，也就是 causal_mask(L, S)"),
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
    "decode-position-offset": ("用到缓存的一步给新词元的位置不对（位置从 0 重新开始，而不是接在缓存的词元之后；或者取自裁剪后缓存的长度）", "在绝对位置 n .. n + T - 1 上旋转新词元，n 是它们之前读过的词元总数（不是裁剪后缓存的长度）"),
    "decode-rope-twice": ("缓存的键在后面的某一步又被旋转了一次：RoPE 作用在了整个缓存上，而不只是新的键", "新的键在进入缓存之前旋转一次；从缓存里取出的键不要再旋转"),
    "decode-attend-before-append": ("用到缓存的一步先做注意力、后把自己的键和值追加进缓存：新词元永远看不到它自己（缓存按 [:pos] 而不是 [:pos + T] 读取，效果也一样）", "先把新的键和值写进缓存，再对整个缓存（包括刚写入的）做注意力：cache[:pos + T]"),
    "decode-causal-top-left": ("用到缓存的一步中，因果掩码按左上角对齐：单个新查询只看到最老的那个缓存键", "改成右下角对齐，即 causal_mask(L, S)；只有一个新查询时干脆不加掩码"),
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
    "an inverted mask is taken as the other convention under auto: your code reads True as blocked, the opposite of F.scaled_dot_product_attention; if it means True = may attend, --mask-convention allow reports it as mask-inverted":
        "在 auto 模式下，读反的掩码会被当作另一种约定：你的代码把 True 当作不允许关注，与 F.scaled_dot_product_attention 相反；如果本意是 True = 可以关注，加上 --mask-convention allow，就会报告为 mask-inverted",
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
}


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
