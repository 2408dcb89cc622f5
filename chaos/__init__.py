"""Faults on purpose: kill every part at random moments, then compare every view with the oracle.

Each scenario (``chaos.scenarios``) runs real processes (``lk`` commands, Kafka nodes) on
a seeded workload, SIGKILLs one of them at a moment drawn from its seed, lets the
platform recover with no manual step, and ends by counting what a reader is served
against the oracle: events lost, events duplicated, rows no contract rule explains.
"""
