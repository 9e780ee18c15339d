"""oar.incubate.ModelAverage against a NumPy model of Paddle's documented window rule."""
import numpy as np
import pytest

import oar


def ref_window(values, rate, min_w, max_w):
    """The average apply() gives after the parameter took values[0], values[1], ..."""
    s1 = s2 = s3 = 0.0
    num = old = updates = 0
    for v in values:
        updates += 1
        num += 1
        s1 = s1 + v
        if num >= min_w and num >= min(max_w, int(updates * rate)):
            s3, s1, s2 = s1 + s2, 0.0, 0.0
            old, num = num, 0
    return (s1 + s2 + s3) / (num + old)


@pytest.mark.parametrize("rate,min_w,max_w,steps", [(0.15, 2, 4, 9), (0.5, 1, 10, 7),
                                                    (1.0, 3, 3, 11)])
def test_model_average_matches_window_rule(rate, min_w, max_w, steps):
    oar.seed(0)
    lin = oar.nn.Linear(3, 2)
    sgd = oar.optimizer.SGD(learning_rate=0.1, parameters=lin.parameters())
    avg = oar.incubate.ModelAverage(rate, parameters=lin.parameters(), min_average_window=min_w,
                                    max_average_window=max_w)
    history = {id(p): [] for p in lin.parameters()}
    x = oar.rand([4, 3])
    for _ in range(steps):
        lin(x).pow(2).mean().backward()
        sgd.step()
        avg.step()
        sgd.clear_grad()
        for p in lin.parameters():
            history[id(p)].append(p.numpy().astype(np.float64))
    trained = [p.numpy().copy() for p in lin.parameters()]
    with avg.apply():
        for p in lin.parameters():
            np.testing.assert_allclose(p.numpy(), ref_window(history[id(p)], rate, min_w,
                                                             max_w), rtol=1e-5)
    for p, t in zip(lin.parameters(), trained):
        np.testing.assert_array_equal(p.numpy(), t)
    with avg.apply(need_restore=False):
        pass
    assert not np.array_equal(lin.weight.numpy(), trained[0])
    avg.restore()
    np.testing.assert_array_equal(lin.weight.numpy(), trained[0])


def test_model_average_skips_params_without_grad_and_bad_args():
    lin = oar.nn.Linear(2, 2)
    avg = oar.incubate.optimizer.ModelAverage(0.5, parameters=lin.parameters(),
                                              min_average_window=1, max_average_window=2)
    w = lin.weight.numpy().copy()
    avg.step()  # no gradients yet: nothing accumulated, apply() changes nothing
    with avg.apply():
        np.testing.assert_array_equal(lin.weight.numpy(), w)
    lin(oar.rand([1, 2])).sum().backward()
    avg.minimize(None)
    avg.clear_grad()
    assert float(lin.weight.grad.abs().sum()) == 0.0
    with pytest.raises(ValueError, match="ModelAverage: average_window_rate must be positive"):
        oar.incubate.ModelAverage(0.0, parameters=lin.parameters())
    with pytest.raises(ValueError, match=r"ModelAverage: min_average_window \(5\) must not "):
        oar.incubate.ModelAverage(0.1, lin.parameters(), 5, 2)
    with pytest.raises(ValueError, match="ModelAverage: parameters is required"):
        oar.incubate.ModelAverage(0.1)
    with pytest.raises(TypeError, match=r"ModelAverage: parameters\[0\] must be a Tensor"):
        oar.incubate.ModelAverage(0.1, [3])
