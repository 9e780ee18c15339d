"""Seeded draws reproduce Paddle 3.3.1's on CPU: the same script as record_paddle_streams.py,
run under oar, against the numbers it recorded from Paddle (data/paddle_3.3.1_streams.json).
Covers the distributions whose draws go through rand/uniform/randn/bernoulli/multinomial
(the gamma, binomial and poisson samplers do not reproduce Paddle's kernels' streams)."""
import json
import os

import numpy as np
import pytest

import oar
from record_paddle_streams import draws

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                     "paddle_3.3.1_streams.json")
with open(_DATA) as f:
    WANT = json.load(f)["draws"]
GOT = None


@pytest.mark.parametrize("name", sorted(WANT))
def test_seeded_draws_match_paddle(name):
    global GOT
    if GOT is None:
        GOT = draws(oar)
    got, want = np.asarray(GOT[name]), np.asarray(WANT[name])
    assert got.shape == want.shape, (name, got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=name)
