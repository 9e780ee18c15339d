"""Memory stats of the caching allocator (paddle.device.memory_allocated and friends)."""
import numpy as np

import oar


def test_memory_stats_follow_tensors(device):
    oar.device.empty_cache()
    base = oar.device.memory_allocated()
    oar.device.reset_max_memory_allocated()
    assert oar.device.max_memory_allocated() == base
    x = oar.zeros([1024, 256], dtype="float32")  # 1 MiB
    assert oar.device.memory_allocated() >= base + (1 << 20)
    assert oar.device.memory_reserved() >= oar.device.memory_allocated()
    peak = oar.device.max_memory_allocated()
    assert peak >= base + (1 << 20)
    del x
    assert oar.device.memory_allocated() == base
    assert oar.device.max_memory_allocated() == peak       # the peak stays
    assert oar.device.memory_reserved() >= base + (1 << 20)  # cached
    assert oar.device.max_memory_reserved() >= oar.device.memory_reserved()
    oar.device.empty_cache()
    assert oar.device.memory_reserved() == oar.device.memory_allocated()
    oar.device.reset_max_memory_allocated()
    assert oar.device.max_memory_allocated() == oar.device.memory_allocated()


def test_stats_are_per_device(sample):
    oar.device.empty_cache("sample:1")
    before0 = oar.device.memory_allocated("sample:0")
    before1 = oar.device.memory_allocated("sample:1")
    y = oar.to_tensor(np.ones((512, 512), "float32"), place="sample:1")
    assert oar.device.memory_allocated("sample:1") >= before1 + (1 << 20)
    assert oar.device.memory_allocated("sample:0") == before0
    del y
    assert oar.device.memory_allocated("sample:1") == before1
