"""Oar's own fuzzer (issue 16): random and invalid calls of every public callable, and
mutated files for every loader, in forked workers with a time limit. `python -m tests.fuzz
--help`; Note [Robustness] in docs/notes/robustness.md. Not collected by the normal pytest
run (tests/python/robustness/test_fuzz_smoke.py runs a short pass of it)."""
