"""DataParallel (and fleet) training on 2 processes reproduces single-process training in
float64 to 1e-10 (workers/data_parallel.py)."""
import numpy as np
import pytest

from _harness import assert_all_ok, run_ranks

import oar

pytestmark = pytest.mark.skipif(not oar._C.distributed.available, reason="built without Gloo")


@pytest.mark.parametrize("mode", ["mlp", "no_sync", "unused", "fleet", "gpt", "to_static", "to_static_forward"])
def test_data_parallel_matches_single_process(mode, tmp_path):
    results, _ = run_ranks("data_parallel.py", 2, [mode], tmp_path=tmp_path)
    assert_all_ok(results)
    assert "max loss diff" in results[0][1]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("divisor", [1, 2, 3, 4])
def test_bucket_pack_and_unpack_match_numpy(dtype, divisor):
    # The reducer's copies: pack lays the gradients end to end; unpack divides by the group
    # size on the way back (a product by 2^-k for powers of two, which rounds as the division).
    rng = np.random.default_rng(divisor)
    shapes = [(3, 4), (0,), (5,), (2, 1, 3)]
    arrays = [rng.standard_normal(s).astype(dtype) * 1e3 for s in shapes]
    grads = [oar.to_tensor(a) for a in arrays]
    flat = oar.empty([sum(a.size for a in arrays)], dtype=dtype)
    oar._C.distributed.bucket_pack(flat, grads)
    np.testing.assert_array_equal(flat.numpy(), np.concatenate([a.ravel() for a in arrays]))
    outs = [oar.zeros(list(s), dtype=dtype) for s in shapes]
    oar._C.distributed.bucket_unpack(flat, outs, divisor)
    for o, a in zip(outs, arrays):
        np.testing.assert_array_equal(o.numpy(), a / np.array(divisor, dtype=dtype))


def test_bucket_copies_reject_bad_inputs():
    f32 = oar.empty([6], dtype="float32")
    with pytest.raises(ValueError, match="bucket_pack: the gradients hold 5 elements, flat 6"):
        oar._C.distributed.bucket_pack(f32, [oar.ones([5], dtype="float32")])
    with pytest.raises(TypeError, match=r"bucket_pack: grads\[0\] is float64, the bucket float32"):
        oar._C.distributed.bucket_pack(f32, [oar.ones([6], dtype="float64")])
    with pytest.raises(ValueError, match=r"bucket_unpack: grads\[1\] must be a contiguous"):
        oar._C.distributed.bucket_unpack(f32, [oar.ones([2], dtype="float32"),
                                               oar.ones([2, 2], dtype="float32").t()], 2)
    with pytest.raises(ValueError, match="bucket_unpack: divisor must be >= 1"):
        oar._C.distributed.bucket_unpack(f32, [oar.ones([6], dtype="float32")], 0)
    with pytest.raises(ValueError, match="divisor must be >= 1 on a floating-point bucket"):
        oar._C.distributed.bucket_unpack(oar.zeros([2], dtype="int32"), [oar.zeros([2], dtype="int32")], 2)
