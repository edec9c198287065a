"""The Chinese of the module check's messages (``check.module``). See ``attention_src.check.zh``."""

# ruff: noqa: E501
# fmt: off

from __future__ import annotations

MESSAGES = {  # English template: Chinese template
    # a module: calling it (module/calling.py, masks.py, probe.py)
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
    "x {shape} (L, B, D), {H} heads": "x {shape} (L, B, D)、{H} 个注意力头",
    "take the softmax over the keys: dim={keys} of these scores, the axis their keys were found on":
        "沿键做 softmax：取这些注意力分数的 dim={keys}，也就是找到键所在的那个轴",
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

    # a module: what was checked (module/facts.py, __init__.py)
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

    # a module: what went wrong (module/behaviour.py, masking.py, trace_facts.py, resolve.py)
    "in eval(), two forward passes on the same x {shape} differ by up to {gap:.3g}; the other checks ran with dropout switched off":
        "eval() 下，对同一个 x {shape} 做两次前向计算，结果相差最多 {gap:.3g}；其余检查是在关闭 Dropout 后运行的",
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
    "with {what} read the other way round, query {i} has no key, and its output is NaN":
        "把{what}反过来读，查询 {i} 没有可用的键，它的输出是 NaN",
    "with {what} read the other way round, query {i} has no key, and its output depends on every other token: a finite fill gives it uniform weights":
        "把{what}反过来读，查询 {i} 没有可用的键，而它的输出依赖其余每一个词元：有限的填充值让它得到了均匀的权重",
}
# fmt: on
