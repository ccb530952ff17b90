"""Random programs, differentiated by sourcegrad and checked against finite differences.

``generate.py`` writes random programs (straight-line numpy from a safe set, branches, bounded
loops, helpers, in-place writes to local buffers); ``check.py`` compiles one and compares it with
the oracle. ``tests/test_fuzz.py`` runs a bounded number under hypothesis;
``python -m tests.fuzz --programs N`` runs many more without stopping at the first failure.
"""
