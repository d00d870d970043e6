"""Chaos: random runs with random crashes, raising taps and failing log writes.

``test_chaos.py`` runs a short batch in the normal suite; ``python -m tests.chaos --runs
3000`` runs a long one and prints what it saw. See :mod:`tests.chaos.harness`.
"""
