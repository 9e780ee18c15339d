"""Records seeded random numbers from a real PaddlePaddle install on CPU, as test data for
tests/python/ops/test_paddle_rng.py (Paddle's CPU streams: which engine each random op draws
from, through which distribution, in which order). Run it with a Python that has paddlepaddle
(3.3.1 was used), e.g.
    ~/.cache/oar-paddle-ref-compat1/bin/python tests/python/ops/data/record_paddle_rng.py
It writes paddle_rng.json beside itself. The same script runs under `import oar as paddle`
(OAR_RNG_RECORD_AS_OAR=1), which is what the test does, so the cases are written once."""
import json
import os
import sys

if os.environ.get("OAR_RNG_RECORD_AS_OAR") == "1":
    import oar as paddle
else:
    import paddle


def _v(t):
    return t.numpy().ravel().tolist()


def cases():
    """name -> a function returning a list of numbers; each seeds the global generator."""
    F = paddle.nn.functional

    def seeded(seed, fn):
        def run():
            paddle.seed(seed)
            return fn()
        return run

    c = {}
    c["rand_f32"] = seeded(2024, lambda: _v(paddle.rand([7])))
    c["rand_f64"] = seeded(2024, lambda: _v(paddle.rand([5], "float64")))
    c["randn_f32_odd"] = seeded(7, lambda: _v(paddle.randn([7])))
    c["randn_f64"] = seeded(7, lambda: _v(paddle.randn([4], "float64")))
    c["standard_normal"] = seeded(8, lambda: _v(paddle.standard_normal([5])))
    c["randint_i64"] = seeded(11, lambda: _v(paddle.randint(-5, 10, [9])))
    c["randint_i32"] = seeded(11, lambda: _v(paddle.randint(0, 100, [6], "int32")))
    c["uniform_range"] = seeded(13, lambda: _v(paddle.uniform([5], min=-2.0, max=3.0)))
    c["uniform_f64"] = seeded(13, lambda: _v(paddle.uniform([3], "float64", min=0.5, max=1.5)))
    c["uniform_own_seed"] = seeded(13, lambda: _v(paddle.uniform([4], min=-5.0, max=-3.0, seed=7)) + _v(paddle.rand([2])))
    c["uniform_f64_inexact"] = seeded(13, lambda: _v(paddle.uniform([3], "float64", min=0.1, max=0.7)))
    c["normal_f64_inexact"] = seeded(14, lambda: _v(paddle.normal(0.1, 0.3, [3]).astype("float64"))
                                     + _v(paddle.randn([3], "float64") * 0.3 + 0.1))
    c["normal_init_f64"] = seeded(14, lambda: _v(paddle.create_parameter(
        [3], "float64", default_initializer=paddle.nn.initializer.Normal(0.1, 0.3))))
    c["uniform_init_f64"] = seeded(14, lambda: _v(paddle.create_parameter(
        [3], "float64", default_initializer=paddle.nn.initializer.Uniform(0.1, 0.7))))
    c["normal_scalar"] = seeded(14, lambda: _v(paddle.normal(1.0, 2.0, [5])))
    c["randperm"] = seeded(15, lambda: _v(paddle.randperm(8)))
    c["randperm_i32"] = seeded(15, lambda: _v(paddle.randperm(6, "int32")))
    c["sequence"] = seeded(3, lambda: _v(paddle.rand([3])) + _v(paddle.randn([3]))
                           + _v(paddle.randint(0, 10, [3])) + _v(paddle.rand([2])))
    c["tensor_uniform_"] = seeded(16, lambda: _v(paddle.zeros([5]).uniform_(-1.0, 1.0)))
    c["tensor_normal_"] = seeded(16, lambda: _v(paddle.zeros([5], "float64").normal_(0.5, 2.0)))
    c["xavier_normal"] = seeded(18, lambda: _v(paddle.create_parameter(
        [3, 4], "float32", default_initializer=paddle.nn.initializer.XavierNormal())))
    c["kaiming_normal"] = seeded(18, lambda: _v(paddle.create_parameter(
        [3, 4], "float32", default_initializer=paddle.nn.initializer.KaimingNormal())))
    c["kaiming_uniform"] = seeded(18, lambda: _v(paddle.create_parameter(
        [3, 4], "float32", default_initializer=paddle.nn.initializer.KaimingUniform())))

    def linear():
        paddle.seed(10)
        m = paddle.nn.Linear(4, 3)
        return _v(m.weight) + _v(m.bias)
    c["linear_init"] = linear

    def conv():
        paddle.seed(10)
        m = paddle.nn.Conv2D(2, 3, 3)
        return _v(m.weight) + _v(m.bias)
    c["conv2d_init"] = conv

    def embedding():
        paddle.seed(10)
        return _v(paddle.nn.Embedding(5, 4).weight)
    c["embedding_init"] = embedding

    def two_layers():
        paddle.seed(10)
        a, b = paddle.nn.Linear(3, 2), paddle.nn.Linear(2, 2)
        return _v(a.weight) + _v(b.weight)
    c["two_linears"] = two_layers

    def dropout():
        paddle.seed(5)
        x = paddle.ones([10])
        return _v(F.dropout(x, p=0.5)) + _v(paddle.nn.Dropout(0.3)(paddle.ones([2, 5])))
    c["dropout"] = dropout

    def bernoulli():
        paddle.seed(6)
        return _v(paddle.bernoulli(paddle.full([8], 0.5)))
    c["bernoulli"] = bernoulli

    def state_roundtrip():
        paddle.seed(17)
        paddle.rand([3])
        st = paddle.get_rng_state()
        a = _v(paddle.rand([4]))
        paddle.set_rng_state(st)
        return a + _v(paddle.rand([4]))
    c["state_roundtrip"] = state_roundtrip
    return c


def run_all():
    out = {}
    for name, fn in cases().items():
        try:
            out[name] = fn()
        except Exception as e:  # recorded so the test can show what Paddle refused
            out[name] = f"error: {type(e).__name__}: {e}"
    return out


if __name__ == "__main__":
    paddle.set_device("cpu")
    data = {"paddle_version": paddle.__version__, "cases": run_all()}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "paddle_rng.json")
    if len(sys.argv) > 1:
        path = sys.argv[1]
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
    print(f"wrote {path}")
