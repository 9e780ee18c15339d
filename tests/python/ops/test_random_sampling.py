"""bernoulli and multinomial: distributions (fixed seeds, tolerances far above sampling
noise), reproducibility under oar.seed, and bad inputs."""
import numpy as np
import pytest

import oar


def test_bernoulli_frequencies_and_reproducible():
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    x = oar.to_tensor(np.tile(p, (20000, 1)).astype(np.float32))
    oar.seed(5)
    s = oar.bernoulli(x)
    assert s.dtype == oar.float32 and s.shape == x.shape
    v = s.numpy()
    assert set(np.unique(v)) <= {0.0, 1.0}
    np.testing.assert_allclose(v.mean(0), p, atol=0.015)  # std of the mean <= 0.0036
    assert v[:, 0].max() == 0 and v[:, 4].min() == 1
    oar.seed(5)
    np.testing.assert_array_equal(oar.bernoulli(x).numpy(), v)
    assert oar.bernoulli(oar.zeros([0, 3])).shape == [0, 3]
    np.testing.assert_allclose(oar.bernoulli(oar.zeros([40000]), p=0.3).numpy().mean(), 0.3,
                               atol=0.01)


def test_bernoulli_bad_inputs():
    with pytest.raises(ValueError, match=r"bernoulli: x must hold probabilities in \[0, 1\], got values in \[-0.5"):
        oar.bernoulli(oar.to_tensor([-0.5, 0.5]))
    with pytest.raises(TypeError, match="bernoulli: x must be a floating-point tensor"):
        oar.bernoulli(oar.to_tensor([0, 1]))
    with pytest.raises(ValueError, match=r"bernoulli: p must be in \[0, 1\], got 2"):
        oar.bernoulli(oar.zeros([2]), p=2)


def test_multinomial_with_replacement_frequencies():
    w = np.array([[1.0, 2.0, 0.0, 7.0], [5.0, 5.0, 5.0, 5.0]])
    oar.seed(1)
    s = oar.multinomial(oar.to_tensor(w), 40000, replacement=True)
    assert s.dtype == oar.int64 and s.shape == [2, 40000]
    for row, wr in zip(s.numpy(), w):
        np.testing.assert_allclose(np.bincount(row, minlength=4) / 40000, wr / wr.sum(), atol=0.01)
    oar.seed(1)
    np.testing.assert_array_equal(oar.multinomial(oar.to_tensor(w), 40000, True).numpy(), s.numpy())
    assert oar.multinomial(oar.to_tensor(w[0]), 3, True).shape == [3]


def test_multinomial_without_replacement():
    w = np.array([1.0, 2.0, 0.0, 7.0])
    oar.seed(2)
    firsts = []
    for _ in range(3000):
        s = oar.multinomial(oar.to_tensor(w), 3).numpy()
        assert sorted(s) == [0, 1, 3]  # distinct, never the zero-weight category
        firsts.append(s[0])
    # the first draw follows the weights
    np.testing.assert_allclose(np.bincount(firsts, minlength=4) / 3000, w / w.sum(), atol=0.03)


def test_multinomial_bad_inputs():
    with pytest.raises(ValueError, match=r"multinomial: num_samples \(4\) exceeds the number of categories with non-zero weight \(3\)"):
        oar.multinomial(oar.to_tensor([1.0, 2.0, 0.0, 7.0]), 4)
    with pytest.raises(ValueError, match="multinomial: every row of x must hold non-negative"):
        oar.multinomial(oar.to_tensor([1.0, -2.0]), 1, True)
    with pytest.raises(ValueError, match="multinomial: every row of x must hold non-negative"):
        oar.multinomial(oar.to_tensor([[1.0, 2.0], [0.0, 0.0]]), 1, True)
    with pytest.raises(ValueError, match=r"multinomial: x must be 1-D or 2-D, got shape \[1, 2, 2\]"):
        oar.multinomial(oar.ones([1, 2, 2]))
    with pytest.raises(ValueError, match="multinomial: num_samples must be positive, got 0"):
        oar.multinomial(oar.ones([3]), 0)
    with pytest.raises(TypeError, match="multinomial: x must be a floating-point tensor"):
        oar.multinomial(oar.to_tensor([1, 2]))
