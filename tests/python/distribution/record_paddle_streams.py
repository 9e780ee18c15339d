"""Records seeded draws of paddle.distribution from a PaddlePaddle install, as the test data
of test_paddle_streams.py (run once with Paddle 3.3.1 on CPU; the output is checked in):

    <venv with paddlepaddle==3.3.1>/bin/python record_paddle_streams.py > data/paddle_3.3.1_streams.json

The same script body runs under oar (`import oar as paddle`) in the test."""
import json


def draws(paddle):
    D = paddle.distribution
    T = paddle.to_tensor
    cases = {
        "Normal.sample": lambda: D.Normal(T(1.0), T(3.0)).sample([4]),
        "Normal.rsample": lambda: D.Normal(T([0.0, 1.0]), T([1.0, 2.0])).rsample([3]),
        "Uniform.sample": lambda: D.Uniform(T(1.0), T(3.0)).sample([3]),
        "Gumbel.sample": lambda: D.Gumbel(T(0.5), T(2.0)).sample([4]),
        "Exponential.sample": lambda: D.Exponential(T([2.0])).sample([3]),
        "Cauchy.rsample": lambda: D.Cauchy(T(1.0), T(3.0)).rsample([3]),
        "Laplace.rsample": lambda: D.Laplace(T([0.0, 1.0]), T([1.0, 0.5])).rsample([3]),
        "Geometric.sample": lambda: D.Geometric(T([0.2, 0.7])).sample([4]),
        "ContinuousBernoulli.sample": lambda: D.ContinuousBernoulli(T([0.2, 0.9])).sample([3]),
        "Bernoulli.sample": lambda: D.Bernoulli(T([0.2, 0.6])).sample([4]),
        "Bernoulli.rsample": lambda: D.Bernoulli(T([0.2, 0.6])).rsample([3], temperature=0.5),
        "Categorical.sample": lambda: D.Categorical(T([0.5, 0.2, 1.0, 0.3])).sample([6]),
        "Multinomial.sample": lambda: D.Multinomial(5, T([0.2, 0.3, 0.5])).sample([2]),
        "MultivariateNormal.sample": lambda: D.MultivariateNormal(
            T([1.0, -1.0]), covariance_matrix=T([[2.0, 0.5], [0.5, 1.0]])).sample([3]),
        "LogNormal.sample": lambda: D.LogNormal(T(0.1), T(0.5)).sample([3]),
    }
    out = {}
    for i, (name, fn) in enumerate(cases.items()):
        paddle.seed(100 + i)
        out[name] = fn().numpy().tolist()
    return out


if __name__ == "__main__":
    import paddle
    paddle.set_device("cpu")
    print(json.dumps({"paddle": paddle.__version__, "draws": draws(paddle)}, indent=1))
