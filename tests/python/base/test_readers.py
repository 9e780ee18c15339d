"""paddle.batch, paddle.reader decorators, base.DataFeeder and base.io.PyReader."""
import numpy as np
import pytest

import oar
from oar import static
from oar.reader import decorator as R


def _count(n):
    return lambda: iter(range(n))


def test_batch_and_decorators():
    assert list(oar.batch(_count(5), 2)()) == [[0, 1], [2, 3], [4]]
    assert list(oar.batch(_count(5), 2, drop_last=True)()) == [[0, 1], [2, 3]]
    assert list(R.firstn(_count(100), 3)()) == [0, 1, 2]
    assert list(R.chain(_count(2), _count(3))()) == [0, 1, 0, 1, 2]
    assert list(R.map_readers(lambda a, b: a * b, _count(3), _count(3))()) == [0, 1, 4]
    assert list(R.compose(_count(2), lambda: iter([(5, 6), (7, 8)]))()) == [(0, 5, 6), (1, 7, 8)]
    with pytest.raises(R.ComposeNotAligned):
        list(R.compose(_count(2), _count(3))())
    assert list(R.compose(_count(2), _count(3), check_alignment=False)()) == [(0, 0), (1, 1)]
    assert sorted(R.shuffle(_count(10), 3)()) == list(range(10))
    assert list(R.buffered(_count(7), 2)()) == list(range(7))
    calls = []

    def once():
        calls.append(1)
        return iter(range(3))
    cached = oar.base.io.cache(once)
    assert list(cached()) == list(cached()) == [0, 1, 2] and len(calls) == 1
    assert list(R.xmap_readers(lambda v: v + 1, _count(6), 3, 2, order=True)()) == [1, 2, 3, 4, 5, 6]
    assert sorted(R.multiprocess_reader([_count(3), _count(2)])()) == [0, 0, 1, 1, 2]


def test_decorator_errors():
    with pytest.raises(ValueError, match="batch: batch_size must be an int >= 1, got 0"):
        oar.batch(_count(3), 0)
    with pytest.raises(TypeError, match="firstn: reader must be a reader creator"):
        R.firstn([1, 2], 1)

    def broken():
        yield 1
        raise KeyError("boom")
    with pytest.raises(KeyError, match="boom"):
        list(R.buffered(broken, 2)())
    with pytest.raises(ValueError, match="multiprocess_reader: readers must be a non-empty list"):
        R.multiprocess_reader([])


def test_data_feeder_reshapes_and_casts(progs):
    a = static.data("a", [None, 2, 2], "float32")
    b = static.data("b", [None, 1], "int64")
    feeder = oar.base.DataFeeder([a, b], oar.CPUPlace())
    rng = np.random.default_rng(1)
    samples = [(rng.standard_normal(4), np.array([i])) for i in range(3)]
    feed = feeder.feed(samples)
    assert feed["a"].shape == (3, 2, 2) and feed["a"].dtype == np.float32
    np.testing.assert_allclose(feed["a"].reshape(3, 4), np.stack([s[0] for s in samples]).astype("float32"))
    assert feed["b"].dtype == np.int64 and feed["b"].ravel().tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="variable 'a' takes samples of 4 values"):
        feeder.feed([(np.ones(3), np.ones(1))])
    with pytest.raises(ValueError, match="each sample must hold 2 values"):
        feeder.feed([(np.ones(4),)])


def test_pyreader_iterable_trains_like_feeding(progs):
    main, startup = progs
    x = static.data("x", [None, 3], "float32")
    y = static.data("y", [None, 1], "float32")
    loss = oar.mean((static.nn.fc(x, 1) - y) ** 2)
    oar.optimizer.SGD(0.1).minimize(loss)
    rng = np.random.default_rng(2)
    data = [(rng.standard_normal(3).astype("float32"), rng.standard_normal(1).astype("float32")) for _ in range(8)]
    reader = oar.base.io.PyReader(feed_list=[x, y], capacity=2, iterable=True)
    reader.decorate_sample_generator(lambda: iter(data), batch_size=4)
    exe = static.Executor()
    exe.run(startup)
    losses = [exe.run(main, feed=d, fetch_list=[loss])[0] for d in reader()]
    assert len(losses) == 2
    # The same batches fed by hand give the same first loss (fresh parameters again).
    exe.run(startup)
    first = exe.run(main, feed={"x": np.stack([d[0] for d in data[:4]]), "y": np.stack([d[1] for d in data[:4]])},
                    fetch_list=[loss])[0]
    np.testing.assert_allclose(first, losses[0], rtol=1e-6)
    batches = oar.base.io.PyReader(feed_list=[x, y], iterable=True)
    batches.decorate_batch_generator(lambda: iter([(np.ones([2, 3]), np.zeros([2, 1]))]))
    (feed,) = list(batches())
    assert feed[0]["x"].dtype == np.float32 and feed[0]["x"].shape == (2, 3)


def test_pyreader_started_reader_ends_with_eof(progs):
    main, startup = progs
    x = static.data("x", [None, 2], "float32")
    s = oar.sum(x)
    reader = oar.base.io.PyReader(feed_list=[x], capacity=4, iterable=False)
    reader.decorate_sample_list_generator(oar.batch(lambda: iter([(np.ones(2) * i,) for i in range(5)]), 2))
    exe = static.Executor()
    for _ in range(2):
        reader.start()
        got = []
        while True:
            try:
                got.append(float(exe.run(main, fetch_list=[s])[0]))
            except oar.base.core.EOFException:
                reader.reset()
                break
        assert got == [2.0, 10.0, 8.0]
    with pytest.raises(RuntimeError, match="is read by Executor.run after start"):
        reader()
    with pytest.raises(RuntimeError, match="only a reader made with iterable=False is started"):
        oar.base.io.PyReader(feed_list=[x]).start()


def test_pyreader_dygraph_returns_tensors():
    reader = oar.base.io.PyReader(capacity=2, return_list=True)
    reader.decorate_sample_list_generator(oar.batch(lambda: iter([(np.ones([2, 2]), np.array([1]))] * 3), 2))
    out = list(reader())
    assert len(out) == 2 and list(out[0][0].shape) == [2, 2, 2] and isinstance(out[1][1], oar.Tensor)
    with pytest.raises(TypeError, match="expected a generator function"):
        reader.decorate_batch_generator([1])
