"""Loops whose trip count comes from the user are bounded (Note [Bounded loops] in
docs/notes/robustness.md): converted while loops (cf.while) whose condition no iteration
changes are an error naming the loop, every converted loop stops at
FLAGS_oar_max_while_iterations, and RNN layer counts are checked against memory before the
first layer is built. Each hang-prone case runs in a child process with a time limit."""
import os
import sys
import textwrap

import numpy as np
import pytest

import oar

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from test_robustness import expect_raise, run_child  # noqa: E402

FLAG = "FLAGS_oar_max_while_iterations"


def run_script(tmp_path, code):
    """Runs `code` from a file (dy2static reads the source) in a child; (rc, output)."""
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent(code))
    return run_child(f"import runpy; runpy.run_path({str(script)!r})")


@pytest.fixture
def loop_limit():
    """Sets the iteration limit for one test and restores it."""
    old = oar.get_flags(FLAG)[FLAG]
    yield lambda n: oar.set_flags({FLAG: n})
    oar.set_flags({FLAG: old})


def test_the_limit_is_a_documented_flag_with_a_default():
    assert oar.get_flags(FLAG)[FLAG] == 10_000_000


# ---- a condition that no iteration changes: an error at the second iteration (the first
# one's next condition is the same in every iteration), at trace time and in the executor.

FIXED_WHILE_LOOP = """
n = oar.to_tensor(5)

@oar.jit.to_static
def f(i, y):
    # the body hands i back unchanged: i < n is the same in every iteration
    return oar.static.nn.while_loop(lambda i, y: i < n, lambda i, y: [i, y + 1], [i, y],
                                    name="{name}")

try:
    f(oar.to_tensor(0), oar.to_tensor(1.0))
except ValueError as e:
    print("RAISED", e)
print("DONE")
"""


@pytest.mark.parametrize("name,label", [("", "while_loop would never end"),
                                        ("count", "while_loop 'count' would never end")])
def test_while_loop_whose_condition_never_changes_raises(name, label):
    rc, out = run_child(FIXED_WHILE_LOOP.replace("{name}", name))
    assert rc == 0 and "DONE" in out, out
    assert f"RAISED {label}" in out and "no iteration changes" in out, out


def test_converted_while_whose_condition_never_changes_names_the_line(tmp_path):
    rc, out = run_script(tmp_path, """
        import oar

        @oar.jit.to_static
        def f(x, n):
            i = oar.zeros([], "int64")
            while i < n:
                x = x + 1
                i = i  # reassigned, never changed
            return x

        try:
            f(oar.ones([2]), oar.to_tensor(3))
        except Exception as e:
            print("RAISED", type(e).__name__, e)
        print("DONE")
    """)
    assert rc == 0 and "DONE" in out, out
    assert "RAISED" in out and "model.py:7: while i < n:" in out and "would never end" in out, out


def test_a_loop_whose_condition_changes_still_runs(loop_limit):
    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([], "int64")
        while i < n:
            x = x * 2
            i = i + 1
        return x

    np.testing.assert_allclose(f(oar.ones([3]), oar.to_tensor(4)).numpy(), np.full(3, 16.0))
    np.testing.assert_allclose(f(oar.ones([3]), oar.to_tensor(0)).numpy(), np.ones(3))
    loop_limit(4)  # exactly 4 iterations are allowed
    np.testing.assert_allclose(f(oar.ones([3]), oar.to_tensor(4)).numpy(), np.full(3, 16.0))


# ---- the iteration limit: at trace time (the converted loop's eager run) and in the
# executor (a program traced with a short loop, run with a long one).

def test_iteration_limit_at_trace_time(loop_limit):
    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([], "int64")
        while i < n:
            x = x + 1
            i = i + 1
        return x

    loop_limit(5)
    with pytest.raises(RuntimeError, match=r"while_loop '.*test_bounded_loops.py:\d+: while i < n:' ran 5 "
                                           r"iterations, the limit FLAGS_oar_max_while_iterations=5"):
        f(oar.ones([2]), oar.to_tensor(6))


def test_iteration_limit_in_the_executor(loop_limit):
    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([], "int64")
        while i < n:
            x = x + 1
            i = i + 1
        return x

    np.testing.assert_allclose(f(oar.zeros([2]), oar.to_tensor(2)).numpy(), [2.0, 2.0])  # traced here
    loop_limit(5)
    np.testing.assert_allclose(f(oar.zeros([2]), oar.to_tensor(5)).numpy(), [5.0, 5.0])
    with pytest.raises(RuntimeError, match=r"cf.while '.*test_bounded_loops.py:\d+: while i < n:' ran 5 "
                                           r"iterations, the limit FLAGS_oar_max_while_iterations=5"):
        f(oar.zeros([2]), oar.to_tensor(10**12))
    loop_limit(0)  # no limit
    np.testing.assert_allclose(f(oar.zeros([2]), oar.to_tensor(7)).numpy(), [7.0, 7.0])


def test_a_loop_past_the_limit_ends_in_a_child_not_a_hang(tmp_path):
    # 2^62 iterations would run for centuries; the limit ends the run with an error.
    rc, out = run_script(tmp_path, """
    import oar
    oar.set_flags({"FLAGS_oar_max_while_iterations": 2000})

    @oar.jit.to_static
    def f(x, n):
        i = oar.zeros([], "int64")
        while i < n:
            i = i + 1
        return i

    print("TRACED", f(oar.zeros([1]), oar.to_tensor(3)).item())
    try:
        f(oar.zeros([1]), oar.to_tensor(2**62))
    except RuntimeError as e:
        print("RAISED", e)
    """)
    assert rc == 0 and "TRACED 3" in out, out
    assert "RAISED Executor: cf.while" in out and "model.py:8: while i < n:' ran 2000 iterations" in out, out


# ---- RNN layer counts: checked before the first layer is built.

@pytest.mark.parametrize("call,needle", [
    ("oar.nn.LSTM(8, 1024, num_layers=2**31)", "LSTM: num_layers=2147483648 layers of hidden_size=1024"),
    ("oar.nn.GRU(4, 4, num_layers=2**62, direction='bidirect')", "GRU: num_layers=4611686018427387904"),
    ("oar.nn.SimpleRNN(4, 2**40)", "SimpleRNN: num_layers=1 layers of hidden_size=1099511627776"),
])
def test_rnn_layer_counts_are_bounded_before_building(call, needle):
    expect_raise(call, "MemoryError", needle, "bytes")


def test_rnn_sizes_must_be_positive_ints():
    for bad in (0, -3, 2.0, True, None):
        for arg in ("num_layers", "hidden_size", "input_size"):
            kw = {"input_size": 4, "hidden_size": 4, "num_layers": 1, arg: bad}
            with pytest.raises(ValueError, match=f"LSTM: {arg} must be a positive int"):
                oar.nn.LSTM(**kw)
    lstm = oar.nn.LSTM(4, 6, num_layers=3, direction="bidirect")
    assert len(list(lstm)) == 3
    # the bound's estimate is the parameters the layers really have (float32)
    n = sum(p.size for p in lstm.parameters())
    assert n == 2 * 4 * 6 * ((4 + 6 + 2) + 2 * (12 + 6 + 2)), n
