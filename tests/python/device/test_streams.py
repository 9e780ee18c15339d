"""Streams and events (paddle.device.Stream / Event / current_stream / set_stream /
stream_guard / synchronize), on 'cpu' (where everything is synchronous) and 'sample:0'
(whose streams run work on worker threads, later than queued)."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import oar


def test_current_stream_default_and_guard(device):
    default = oar.device.current_stream()
    assert default.device.device_str() == device
    assert oar.device.current_stream(device) == default
    s = oar.device.Stream(device)
    with oar.device.stream_guard(s):
        assert oar.device.current_stream() == s
        seen = []
        t = threading.Thread(target=lambda: seen.append(oar.device.current_stream(device)))
        t.start()
        t.join()
        assert seen[0] == default  # the current stream is per thread
        x = oar.to_tensor([1.0, 2.0]) * 2.0  # work while another stream is current
        np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])
    assert oar.device.current_stream() == default
    prev = oar.device.set_stream(s)
    assert prev == default and oar.device.current_stream() == s
    assert oar.device.set_stream(prev) == s
    with oar.device.stream_guard(None):
        assert oar.device.current_stream() == default


def test_events_order_copies_across_streams(device, monkeypatch):
    monkeypatch.setenv("SAMPLE_DEVICE_DELAY_US", "20000")  # read when a stream is created
    slow = oar.device.Stream(device)
    monkeypatch.delenv("SAMPLE_DEVICE_DELAY_US")
    fast = oar.device.Stream(device)
    a = np.arange(4096, dtype="float32")
    host = oar.to_tensor(a, place="cpu")
    with oar.device.stream_guard(slow):
        x = host._copy_to(device, False)  # queued on the slow stream, 10-20 ms per item
        event = slow.record_event()
    fast.wait_event(event)  # the fast stream's later work waits for the copy
    with oar.device.stream_guard(fast):
        y = x._copy_to("cpu", False)  # reads x on the fast stream: after the slow copy
    fast.synchronize()
    event.synchronize()
    np.testing.assert_array_equal(y.numpy(), a)
    e2 = oar.device.Event(device)
    e2.record(fast)
    e2.synchronize()
    # wait_stream records a temporary event that is destroyed while the slow stream's
    # wait for it is still queued (this hung when the plugin freed the event at once).
    slow.wait_stream(fast)
    slow.synchronize()


def test_synchronize_waits_for_queued_copies(device):
    s = oar.device.Stream(device)
    a = np.random.default_rng(1).standard_normal(10000).astype("float32")
    with oar.device.stream_guard(s):
        xs = [oar.to_tensor(a * i, place="cpu")._copy_to(device, False) for i in range(5)]
    oar.device.synchronize(device)
    for i, x in enumerate(xs):
        np.testing.assert_array_equal(x.numpy(), a * i)


def test_streams_and_events_check_their_devices(sample):
    s0 = oar.device.Stream("sample:0")
    e1 = oar.device.Event("sample:1")
    with pytest.raises(ValueError, match="the stream is of sample:0, the event of sample:1"):
        s0.wait_event(e1)
    with pytest.raises(ValueError, match="the event is of sample:1, the stream of sample:0"):
        e1.record(s0)
    with pytest.raises(ValueError, match="'sample' has 2 device"):
        oar.device.Stream("sample:5")


@pytest.mark.skipif(os.environ.get("SAMPLE_DEVICE_DELAY_US") is not None, reason="sets its own delay")
def test_reading_a_device_tensor_waits_for_its_queued_copy(sample, monkeypatch):
    monkeypatch.setenv("SAMPLE_DEVICE_DELAY_US", "200000")  # 100-200 ms per item
    s = oar.device.Stream("sample:0")
    monkeypatch.delenv("SAMPLE_DEVICE_DELAY_US")
    a = np.arange(64, dtype="float32")
    with oar.device.stream_guard(s):
        x = oar.to_tensor(a, place="cpu")._copy_to("sample:0", False)  # still queued
        e = s.record_event()
    np.testing.assert_array_equal(x.numpy(), a)  # numpy() synchronizes the device first
    assert x.tolist() == a.tolist()
    e.synchronize()


_SLEEP_WAKE_SCRIPT = r"""
import random, sys, time
import oar
oar.device.load_plugin(sys.argv[1])
p = oar.CustomPlace('sample', 0)
one = oar._C.ops.full([1], 1.0, oar.float32, p)
acc = oar._C.ops.full([1], 0.0, oar.float32, p)
rng = random.Random(0)
n = 4000
for i in range(n):
    acc = oar.add(acc, one)
    # gaps around the worker's ~40-60 us of naps (the environment below): it often goes to
    # sleep as the next launch comes
    end = time.perf_counter() + rng.uniform(30e-6, 90e-6)
    while time.perf_counter() < end:
        pass
    if i % 50 == 49:
        oar.device.synchronize('sample:0')
print(float(acc.numpy()[0]))
"""


def test_launches_racing_the_workers_sleep_are_never_lost(sample):
    # The stream's wake-up handshake (the host's launch vs the worker going to sleep, with
    # membarrier(2) on the worker's side): a lost wake-up leaves an item queued with the
    # worker asleep, so a synchronize never returns; run in a child to fail, not hang.
    from sample_plugin import sample_plugin_path

    # Naps of 20 us for 40 us (defaults 100 us for 5 ms), so the sleep races the launches.
    env = dict(os.environ, SAMPLE_DEVICE_NAP_US="20", SAMPLE_DEVICE_NAPPING_US="40")
    out = subprocess.run([sys.executable, "-c", _SLEEP_WAKE_SCRIPT, sample_plugin_path()], capture_output=True,
                         text=True, timeout=240, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "4000.0"
