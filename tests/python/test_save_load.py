"""oar.save / oar.load: round trips, safetensors layout, atomicity, corrupt files."""

import json
import os
import struct
import zlib

import numpy as np
import pytest

import oar
from oar import _C


def roundtrip(obj, tmp_path, **kw):
    p = tmp_path / "ckpt.pdparams"
    oar.save(obj, str(p))
    return oar.load(str(p), **kw)


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "int64", "int32", "bool", "uint8", "int8", "int16"]
)
def test_tensor_roundtrip_dtypes(tmp_path, dtype):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(3, 4)) * 10).astype(dtype)
    t = roundtrip(oar.to_tensor(a), tmp_path)
    assert isinstance(t, oar.Tensor) and t.dtype.name == dtype
    np.testing.assert_array_equal(t.numpy(), a)


def test_bfloat16_and_zero_size_and_scalar_tensor(tmp_path):
    x = oar.to_tensor(np.array([1.5, -2.25, 3e5], np.float32)).astype("bfloat16")
    out = roundtrip({"b": x, "z": oar.zeros([0, 3]), "s": oar.to_tensor(2.5)}, tmp_path)
    assert out["b"].dtype == oar.bfloat16
    np.testing.assert_array_equal(out["b"].numpy(), x.numpy())
    assert out["z"].shape == [0, 3] and out["s"].shape == [] and float(out["s"]) == 2.5


def test_nested_structures_and_scalars(tmp_path):
    obj = {
        "model": {"w": oar.ones([2, 2]), "b": oar.zeros([2])},
        "opt": {"step": 7, "lr": 0.125, "flags": [True, None, "adam"], 3: (1, 2.0)},
        "np": np.arange(5, dtype=np.int16),
        "t": (oar.arange(3),),
    }
    out = roundtrip(obj, tmp_path)
    assert list(out) == ["model", "opt", "np", "t"]
    np.testing.assert_array_equal(out["model"]["w"].numpy(), np.ones([2, 2]))
    assert out["opt"]["step"] == 7 and out["opt"]["lr"] == 0.125
    assert out["opt"]["flags"] == [True, None, "adam"] and out["opt"][3] == (1, 2.0)
    assert isinstance(out["np"], np.ndarray) and out["np"].dtype == np.int16
    assert isinstance(out["t"], tuple) and out["t"][0].numpy().tolist() == [0, 1, 2]
    assert isinstance(roundtrip({"a": oar.ones([1])}, tmp_path, return_numpy=True)["a"], np.ndarray)


def test_layer_state_dict_roundtrip(tmp_path):
    oar.seed(0)
    net = oar.nn.Sequential(oar.nn.Linear(4, 3), oar.nn.ReLU(), oar.nn.Linear(3, 2))
    oar.save(net.state_dict(), str(tmp_path / "m.pdparams"))
    oar.seed(1)
    net2 = oar.nn.Sequential(oar.nn.Linear(4, 3), oar.nn.ReLU(), oar.nn.Linear(3, 2))
    net2.set_state_dict(oar.load(str(tmp_path / "m.pdparams")))
    x = oar.randn([5, 4])
    np.testing.assert_array_equal(net(x).numpy(), net2(x).numpy())


def test_file_is_safetensors_layout(tmp_path):
    p = tmp_path / "a.safetensors"
    oar.save({"w": oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))}, str(p))
    raw = p.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    ((name, info),) = [(k, v) for k, v in header.items() if k != "__metadata__"]
    assert info["dtype"] == "F32" and info["shape"] == [2, 3]
    b, e = info["data_offsets"]
    np.testing.assert_array_equal(
        np.frombuffer(raw[8 + n + b : 8 + n + e], np.float32), np.arange(6)
    )
    assert all(isinstance(v, str) for v in header["__metadata__"].values())
    assert (8 + n) % 8 == 0


def test_plain_safetensors_file_loads(tmp_path):
    a = np.arange(4, dtype=np.int32)
    header = json.dumps({"x": {"dtype": "I32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    p = tmp_path / "plain.safetensors"
    p.write_bytes(struct.pack("<Q", len(header)) + header + a.tobytes())
    out = oar.load(str(p))
    assert list(out) == ["x"] and out["x"].numpy().tolist() == [0, 1, 2, 3]


def test_truncated_and_corrupt_files_rejected(tmp_path):
    p = tmp_path / "c.pdparams"
    oar.save({"w": oar.ones([64]), "step": 3}, str(p))
    raw = p.read_bytes()
    for cut in (0, 5, 20, len(raw) - 1):
        q = tmp_path / f"cut{cut}"
        q.write_bytes(raw[:cut])
        with pytest.raises(ValueError, match=f"{q.name}.*truncated"):
            oar.load(str(q))
    bad = bytearray(raw)
    bad[-3] ^= 0xFF
    q = tmp_path / "flipped"
    q.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="flipped.*checksum"):
        oar.load(str(q))
    bad = bytearray(raw)
    bad[11] = ord("X")  # a tensor's name inside the header
    q = tmp_path / "renamed"
    q.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="renamed.*checksum"):
        oar.load(str(q))
    bad = bytearray(raw)
    bad[8] = ord("#")
    q = tmp_path / "badjson"
    q.write_bytes(bytes(bad))
    with pytest.raises(ValueError, match="badjson.*JSON"):
        oar.load(str(q))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        oar.load(str(tmp_path / "missing"))


@pytest.mark.parametrize("threads", [1, 2])
def test_checksum_of_large_tensors(tmp_path, threads):
    # Tensors of 256 KiB and more are checksummed in pieces (split over the pool, joined
    # with crc32_combine): the file must still carry zlib.crc32 of its bytes, read back
    # equal, and reject one flipped bit in any piece, the last short one included.
    rng = np.random.default_rng(7)
    state = {"a": rng.standard_normal(3 * 65536 + 1234).astype(np.float32),  # 3 pieces + a tail
             "b": rng.standard_normal(65536 * 2).astype(np.float32),  # exactly 2 pieces
             "c": rng.integers(0, 255, 100, dtype=np.uint8)}
    p = tmp_path / "big.pdparams"
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        oar.save({k: oar.to_tensor(v) for k, v in state.items()}, str(p))
        out = oar.load(str(p))
        for k, v in state.items():
            np.testing.assert_array_equal(out[k].numpy(), v)
        raw = p.read_bytes()
        start = 8 + struct.unpack("<Q", raw[:8])[0]
        for off in (0, 262143, 262144, 3 * 262144 + 10, len(raw) - start - 101):
            bad = bytearray(raw)
            bad[start + off] ^= 0x10
            q = tmp_path / f"bit{off}"
            q.write_bytes(bytes(bad))
            with pytest.raises(ValueError, match=f"bit{off}.*checksum"):
                oar.load(str(q))
    finally:
        oar.set_num_threads(prev)


@pytest.mark.parametrize("threads", [1, 2])
def test_crc32_is_zlibs(threads):
    # The checksum (libdeflate's carry-less-multiply CRC, pieces joined with crc32_combine)
    # is zlib.crc32's value for every length around its 64-byte folds and 256 KiB pieces,
    # from any running value, at any alignment.
    rng = np.random.default_rng(3)
    buf = rng.integers(0, 256, 3 * 262144 + 300, dtype=np.uint8).tobytes()
    prev = oar.get_num_threads()
    oar.set_num_threads(threads)
    try:
        for n in (0, 1, 7, 15, 16, 63, 64, 65, 127, 128, 255, 4095, 262143, 262144, 524287,
                  524288, 524289, 3 * 262144 + 299):
            for start in (0, 1, 13):
                chunk = buf[start:start + n]
                for init in (0, 1, 0xFFFFFFFF, 0x12345678):
                    assert _C.inference.crc32(chunk, init) == zlib.crc32(chunk, init), (n, start, init)
        assert _C.inference.crc32(memoryview(np.arange(100, dtype=np.float32)).cast("B")) == \
            zlib.crc32(np.arange(100, dtype=np.float32).tobytes())
    finally:
        oar.set_num_threads(prev)
    with pytest.raises(ValueError, match="crc32: data must be a contiguous buffer"):
        _C.inference.crc32(np.zeros((4, 4), np.uint8)[:, ::2])


def test_saved_checksum_is_zlibs(tmp_path):
    # The file's crc32 is zlib.crc32 over the canonical entries, the structure and the data,
    # so other tools can check it.
    rng = np.random.default_rng(5)
    state = {"w": oar.to_tensor(rng.standard_normal([300, 1000]).astype(np.float32)),
             "n": 3, "b": oar.to_tensor(np.array([True, False]))}
    p = tmp_path / "c.pdparams"
    oar.save(state, str(p))
    raw = p.read_bytes()
    hlen = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + hlen])
    meta = header.pop("__metadata__")
    want = zlib.crc32(json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
                      + meta["structure"].encode())
    want = zlib.crc32(raw[8 + hlen:], want)
    assert meta["crc32"] == str(want)


def test_save_is_atomic(tmp_path, monkeypatch):
    p = tmp_path / "a.pdparams"
    oar.save({"w": oar.ones([3])}, str(p))
    before = p.read_bytes()
    real_fsync = os.fsync

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        oar.save({"w": oar.zeros([3])}, str(p))
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert p.read_bytes() == before
    assert os.listdir(tmp_path) == ["a.pdparams"]  # no temp file left behind


def test_unsupported_objects_rejected(tmp_path):
    with pytest.raises(TypeError, match="oar.save.*object"):
        oar.save({"f": object()}, str(tmp_path / "x"))
    with pytest.raises(TypeError, match="key"):
        oar.save({(1, 2): 1}, str(tmp_path / "x"))
    assert not os.path.exists(tmp_path / "x")


class _Eval:
    def __reduce__(self):
        return (eval, ("__import__('os').getpid()",))


def test_load_never_executes_code(tmp_path):
    """A pickle of plain data loads (Paddle's checkpoints are pickles, Note [Paddle
    checkpoints]); one naming any callable but NumPy's array constructors is refused."""
    import pickle

    p = tmp_path / "evil"
    p.write_bytes(pickle.dumps({"a": 1, "b": [2.5, "s"]}))
    assert oar.load(str(p)) == {"a": 1, "b": [2.5, "s"]}
    p.write_bytes(pickle.dumps({"a": _Eval()}))
    with pytest.raises(ValueError, match=r"evil' is neither .* \(it refers to builtins\.eval"):
        oar.load(str(p))


def test_one_safetensors_reader_for_oar_load_and_saved_models(tmp_path):
    # oar.load checks files with the C++ reader the predictor uses (params_reader.h)
    p = tmp_path / "w.pdparams"
    oar.save({"w": oar.ones([4]), "u": np.arange(3, dtype="uint16"), "b": oar.ones([2]).astype("bfloat16")}, str(p))
    out = oar.load(str(p))
    assert out["u"].dtype == np.uint16 and out["u"].tolist() == [0, 1, 2]
    assert out["b"].dtype == oar.bfloat16 and out["b"].astype("float32").numpy().tolist() == [1.0, 1.0]
    raw = p.read_bytes()
    q = tmp_path / "flip"
    q.write_bytes(raw[:-1] + bytes([raw[-1] ^ 1]))
    with pytest.raises(ValueError) as from_load:
        oar.load(str(q))
    with pytest.raises(ValueError) as from_reader:
        oar._C.inference.parse_safetensors(q.read_bytes(), str(q))
    assert "checksum mismatch" in str(from_reader.value) and str(from_reader.value) in str(from_load.value)
    entries, start, fmt, _ = oar._C.inference.parse_safetensors(raw, str(p))
    assert fmt == "oar.safetensors.v1" and start % 8 == 0
    assert [(n, d, s) for n, d, s, _, _ in entries] == [("t0", "F32", [4]), ("t1", "U16", [3]), ("t2", "BF16", [2])]
