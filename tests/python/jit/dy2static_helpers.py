"""Shared by the test_dy2static_*.py suites: inputs and the one-program check."""
import numpy as np

import oar


def rand(*shape, seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype("float32"))


def pos_neg(*shape):
    return rand(*shape).abs() + 0.1, -rand(*shape, seed=1).abs() - 0.1


def one_program(f, op="cf.if"):
    assert len(f.concrete_programs) == 1
    assert op in str(f.main_program)
