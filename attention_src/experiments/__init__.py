"""Toy tasks, their data and the tiny trainings the chapters run to show real
results. Experiments, not lessons: they use the lessons' modules, and no lesson
imports them.

- ``training``: ``train``, the one training loop every training calls (AdamW or
  SGD, optional warm-up and clipping), and the order classifier's training;
- ``seq2seq_task``: copying or reversing a sequence with the GRU models
  (chapter "Why attention");
- ``partner``: the partner task that needs the query and key projections;
- ``copy_task``: a random half, then the same again, for ``CausalLM``;
- ``tagger``: the previous-token task and the one-layer tagger of the
  positional-encoding chapter;
- ``classifier``: "does A come before B?" and the encoder classifier;
- ``tasks``: reversal, previous-token and sorting tasks with known attention
  patterns, and the tools that score the maps (attention maps);
- ``position_schemes``: one tagger, five ways to tell it positions (the RoPE,
  GQA and windows chapters).
"""
