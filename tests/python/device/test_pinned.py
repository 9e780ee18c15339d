"""Pinned host memory (Note [Pinned memory], docs/notes/devices.md): Tensor.pin_memory /
is_pinned, CUDAPinnedPlace, asynchronous copies from and into pinned memory, and the
allocator's rule that a freed block is not reused before the copies that touched it ran.

The tests that watch a copy still queued use the sample device's debug delay
(SAMPLE_DEVICE_DELAY_US, read when a stream is created) on 'sample:0'."""
import os
import subprocess
import sys

import numpy as np
import pytest

import oar

DELAYED = pytest.mark.skipif(os.environ.get("SAMPLE_DEVICE_DELAY_US") is not None, reason="sets its own delay")
DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "bool", "complex64"]
SHAPES = [(3, 4), (0,), (2, 0, 3), (), (5, 1, 3)]


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "complex64":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.startswith("int"):
        return rng.integers(-100, 100, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _slow_stream(monkeypatch, us=100000):
    """A new stream of sample:0 whose items each take us/2..us more (the plugin's delay)."""
    monkeypatch.setenv("SAMPLE_DEVICE_DELAY_US", str(us))
    s = oar.device.Stream("sample:0")
    monkeypatch.delenv("SAMPLE_DEVICE_DELAY_US")
    return s


def _stats():
    return oar._C._pinned_memory_stats()


@pytest.mark.parametrize("dtype", DTYPES)
def test_pin_memory_keeps_values_shapes_and_dtypes(device, dtype):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        a = _values(rng, shape, dtype)
        x = oar.to_tensor(a)  # on the current device: pinning a device tensor is a D2H copy
        assert not x.is_pinned()
        p = x.pin_memory()
        assert p.is_pinned() and p.place == oar.CPUPlace() and p.dtype == x.dtype
        assert tuple(p.shape) == shape
        np.testing.assert_array_equal(p.numpy(), a)
        assert p.pin_memory() is p  # already pinned: itself, as PyTorch and Paddle


def test_pin_memory_of_non_contiguous_views(device):
    a = np.arange(60, dtype="float64").reshape(3, 4, 5)
    base = oar.to_tensor(a)
    for view, ref in [(base.transpose([2, 0, 1]), a.transpose(2, 0, 1)), (base[:, 1:3, ::2], a[:, 1:3, ::2]),
                      (base[1], a[1])]:
        p = view.pin_memory()
        assert p.is_pinned() and p.is_contiguous()
        np.testing.assert_array_equal(p.numpy(), ref)


def test_ops_on_pinned_tensors_are_cpu_ops(sample):
    a = np.random.default_rng(1).standard_normal((4, 6)).astype("float32")
    p = oar.to_tensor(a, place="cpu").pin_memory()
    y = oar.matmul(p, p.T) + 1
    assert y.place == oar.CPUPlace() and not y.is_pinned()  # outputs are ordinary CPU tensors
    np.testing.assert_allclose(y.numpy(), a.astype("float64") @ a.T.astype("float64") + 1, rtol=1e-5)
    view = p[1:3]
    assert view.is_pinned()  # a view shares the pinned storage
    p.add_(oar.ones([4, 6]))  # in place: stays in its pinned memory
    assert p.is_pinned()
    np.testing.assert_allclose(view.numpy(), a[1:3] + 1)
    assert p.sum().item() == pytest.approx(float(a.sum() + 24), rel=1e-5)


def test_gradients_flow_through_pin_memory(device):
    x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
    p = x.pin_memory()
    (p * p).sum().backward()
    assert x.grad.place == x.place
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_paddle_forms_of_pinned_places(device):
    place = oar.CUDAPinnedPlace()
    assert repr(place) == "Place(gpu_pinned)" and place.is_cuda_pinned_place() and not place.is_cpu_place()
    assert place == oar.CUDAPinnedPlace() and hash(place) == hash(oar.CUDAPinnedPlace())
    t = oar.to_tensor([[1, 2], [3, 4]], dtype="int32", place=place, stop_gradient=False)
    assert t.is_pinned() and t.dtype == oar.int32 and t.is_leaf and not t.stop_gradient
    np.testing.assert_array_equal(t.numpy(), [[1, 2], [3, 4]])
    x = oar.to_tensor(np.arange(6, dtype="float32"))
    for p in (x.to(place), x.to(place, blocking=False), x._copy_to(place, False), x.to(device=place)):
        assert p.is_pinned()
        np.testing.assert_array_equal(p.numpy(), np.arange(6))
    # PyTorch's pin_memory(device) and Paddle's pin_memory(blocking) both work.
    assert x.pin_memory("sample:1").is_pinned()
    assert x.pin_memory(False, device="sample:0").is_pinned()


def test_pytorch_creation_flags_pin_and_place(sample):
    """as_tensor(pin_memory=True) and the window functions' device/pin_memory arguments."""
    t = oar.as_tensor([1.0, 2.0], pin_memory=True, requires_grad=True)
    assert t.is_pinned() and t.place.is_cpu_place() and not t.stop_gradient
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
    assert not oar.as_tensor([1.0, 2.0]).is_pinned()
    w = oar.hann_window(5, pin_memory=True)
    assert w.is_pinned()
    np.testing.assert_allclose(w.numpy(), np.hanning(6)[:-1], rtol=1e-6, atol=1e-7)
    d = oar.hann_window(5, device="sample:0")
    assert d.place.device_str() == "sample:0"
    np.testing.assert_array_equal(d.numpy(), w.numpy())


def test_pin_memory_refuses_bad_devices(sample):
    x = oar.to_tensor([1.0])
    with pytest.raises(ValueError, match="pin_memory: pinned memory belongs to a device such as .*got device 'cpu'"):
        x.pin_memory(device="cpu")
    with pytest.raises(ValueError, match="pin_memory: device 'nodev:0' is not available"):
        x.pin_memory(device="nodev:0")
    with pytest.raises(ValueError, match="'sample' has 2 device"):
        x.pin_memory(device="sample:7")
    with pytest.raises(ValueError, match="pin_memory: argument 'device' must be a device"):
        oar._C._pin_memory(x, oar.CPUPlace(), True)


def test_pin_memory_without_a_device_names_what_is_missing():
    code = ("import oar\n"
            "for f in (lambda: oar.to_tensor([1.0]).pin_memory(),\n"
            "          lambda: oar.to_tensor([1.0], place=oar.CUDAPinnedPlace())):\n"
            "    try:\n"
            "        f()\n"
            "    except RuntimeError as e:\n"
            "        print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={k: v for k, v in os.environ.items() if k != "CUSTOM_DEVICE_ROOT"})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2, out.stdout
    assert lines[0].startswith("pin_memory: pinned memory belongs to a device, and this process has only the CPU")
    assert lines[1].startswith("to_tensor: pinned memory belongs to a device")
    assert "not compiled with CUDA and no device plugin is loaded" in lines[0]


@DELAYED
def test_copies_from_pinned_memory_are_asynchronous(sample, monkeypatch):
    s = _slow_stream(monkeypatch)
    a = np.random.default_rng(2).standard_normal(5000).astype("float32")
    p = oar.to_tensor(a, place="cpu").pin_memory()
    with oar.device.stream_guard(s):
        d = p.to("sample:0", blocking=False)
        done = s.record_event()
    assert d.place == oar.CustomPlace("sample", 0)
    assert not done.query() and not s.query()  # returned while the copy is still queued
    oar.device.synchronize("sample:0")
    assert done.query() and s.query()
    np.testing.assert_array_equal(d.numpy(), a)
    with oar.device.stream_guard(s):
        d2 = p[1000:2000].to("sample:0", blocking=False)  # a contiguous view of the block
    np.testing.assert_array_equal(d2.numpy(), a[1000:2000])  # reading it synchronizes by itself


@DELAYED
def test_a_freed_pinned_block_waits_for_its_queued_copy(sample, monkeypatch):
    s = _slow_stream(monkeypatch)
    first = np.arange(4096, dtype="float32")
    p = oar.to_tensor(first, place="cpu").pin_memory()
    with oar.device.stream_guard(s):
        d = p.to("sample:0", blocking=False)  # reads p's block when the stream gets there
        done = s.record_event()
    before = _stats()
    del p  # the block is free, but its copy has not run yet
    q = oar.to_tensor(np.zeros(4096, "float32"), place="cpu").pin_memory()  # same size
    q.fill_(-7.0)  # must not land in the block the queued copy still reads
    assert not done.query()
    allocs = _stats()["num_device_allocs"]
    oar.device.synchronize("sample:0")
    np.testing.assert_array_equal(d.numpy(), first)
    assert allocs == before["num_device_allocs"] + 1  # q got a new block, not the busy one
    np.testing.assert_array_equal(q.numpy(), np.full(4096, -7.0, "float32"))
    # Once the copy ran, the block is reused without asking the device again.
    after = _stats()
    r = oar.to_tensor(np.ones(4096, "float32"), place="cpu").pin_memory()
    assert r.is_pinned() and _stats()["num_device_allocs"] == after["num_device_allocs"]


@DELAYED
def test_copies_into_pinned_memory_are_asynchronous_and_reads_wait(sample, monkeypatch):
    s = _slow_stream(monkeypatch)
    a = np.random.default_rng(3).standard_normal(3000).astype("float32")
    x = oar.to_tensor(a, place="sample:0")
    outs = []
    for read in (lambda h: h.numpy(), lambda h: np.asarray(h.tolist(), "float32"),
                 lambda h: np.array(np.from_dlpack(h)), lambda h: np.float32(h[5].item()) * np.ones(3000, "float32")):
        # A free block of the same size holding other values: a read that did not wait for
        # the queued copy would see them.
        junk = oar.to_tensor(np.full(3000, -1.0, "float32"), place="cpu").pin_memory()
        del junk
        with oar.device.stream_guard(s):
            h = x.pin_memory(blocking=False)  # D2H queued on the slow stream
        assert h.is_pinned() and h.place == oar.CPUPlace()
        assert not s.query()  # still queued
        outs.append(read(h))  # waits for the copy (not for the whole device)
        del h
    np.testing.assert_array_equal(outs[0], a)
    np.testing.assert_array_equal(outs[1], a)
    np.testing.assert_array_equal(outs[2], a)
    np.testing.assert_array_equal(outs[3], np.full(3000, a[5]))
    with oar.device.stream_guard(s):
        h = x.to(oar.CUDAPinnedPlace(), blocking=False)
    assert "1." in repr(oar.to_tensor([1.0], place=oar.CUDAPinnedPlace()))
    assert repr(h) == repr(oar.to_tensor(a))  # __repr__ reads through numpy()


def test_pageable_async_copies_stay_correct(device):
    if device == "cpu":
        pytest.skip("a copy to the CPU of a CPU tensor is the tensor itself: nothing is queued")
    a = np.random.default_rng(4).standard_normal(10000).astype("float32")
    x = oar.to_tensor(a, place="cpu")
    d = x._copy_to(device, False)
    x.fill_(0.0)  # pageable memory is staged (or copied at once): the copy keeps the old values
    del x
    np.testing.assert_array_equal(d.numpy(), a)


def test_pinned_blocks_are_cached_and_empty_cache_returns_them(sample):
    oar._C._pinned_empty_cache()
    base = _stats()
    assert base["cached_bytes"] == 0
    p = oar.zeros([1000], dtype="float64").pin_memory()  # 8000 bytes: an 8 KiB block
    s1 = _stats()
    assert s1["allocated_bytes"] == base["allocated_bytes"] + 8192
    del p
    s2 = _stats()
    assert s2["allocated_bytes"] == base["allocated_bytes"] and s2["cached_bytes"] == 8192
    p = oar.zeros([2000], dtype="float32").pin_memory()  # same rounded size: reused
    assert _stats()["num_device_allocs"] == s1["num_device_allocs"]
    del p
    oar._C._pinned_empty_cache()
    assert _stats()["cached_bytes"] == 0
