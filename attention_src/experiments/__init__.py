"""Toy tasks, their data and the tiny trainings the chapters run to show real
results: sorting and copying tasks, the order classifier, the position taggers.

Experiments, not lessons: they use the lessons' modules, and no lesson imports them.
"""
