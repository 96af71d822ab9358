"""Downstream models that are not a built-in family's likelihood: a small neural network
(:mod:`~pearlstats.downstream.mlp`) and any object with ``fit``/``predict``
(:mod:`~pearlstats.downstream.estimator`, e.g. a scikit-learn estimator).

Each wraps a built-in family (:mod:`pearlstats.families`: its response coding, losses and
checks) in a :class:`~pearlstats.families.Family` of its own. They sit above the families
and the engines, which never import them, so the engines, the families and the weights read
top-down without a circle (issue 35).
"""
