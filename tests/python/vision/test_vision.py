"""oar.vision: transforms against NumPy, IDX datasets, model constructors."""

import gzip
import struct

import numpy as np
import pytest

import oar
import oar.vision.transforms as T
from oar.vision.datasets import MNIST, FashionMNIST


def img(h=6, w=8, c=3, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.random((h, w, c)) * 255).astype(dtype)


def test_to_tensor_and_normalize():
    a = img()
    t = T.ToTensor()(a)
    assert isinstance(t, oar.Tensor) and t.shape == [3, 6, 8] and t.dtype == oar.float32
    np.testing.assert_allclose(t.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    assert T.ToTensor("HWC")(a).shape == [6, 8, 3]
    assert T.ToTensor()(a[:, :, 0]).shape == [1, 6, 8]
    f = a.astype(np.float32)
    np.testing.assert_allclose(T.ToTensor()(f).numpy(), f.transpose(2, 0, 1))
    n = T.Normalize(mean=[0.5, 0.4, 0.3], std=[0.2, 0.25, 0.5])(t)
    ref = (a.transpose(2, 0, 1) / 255.0 - np.array([0.5, 0.4, 0.3])[:, None, None]) / np.array(
        [0.2, 0.25, 0.5]
    )[:, None, None]
    np.testing.assert_allclose(n.numpy(), ref, rtol=1e-5, atol=1e-6)
    hwc = T.Normalize(127.5, 127.5, data_format="HWC")(a)
    np.testing.assert_allclose(hwc, (a - 127.5) / 127.5, rtol=1e-6)
    with pytest.raises(ValueError, match="std"):
        T.Normalize(0.0, 0.0)(t)
    with pytest.raises(TypeError, match="NumPy"):
        T.ToTensor()([[1, 2]])


@pytest.mark.parametrize("fmt", ["CHW", "HWC"])
@pytest.mark.parametrize("to_rgb", [False, True])
def test_normalize_per_channel_every_kind(fmt, to_rgb):
    # per-channel mean/std on NumPy arrays (uint8, float64) and Tensors (float32, uint8) in
    # both layouts, with the channel flip, against float64; a 2-D image takes one value
    rng = np.random.default_rng(4)
    mean, std = [0.5, 20.0, -3.0], [0.25, 2.0, 4.0]
    c_axis = 0 if fmt == "CHW" else 2
    for a in (img(9, 11, 3, np.uint8), rng.standard_normal((9, 11, 3))):
        if fmt == "CHW":
            a = np.ascontiguousarray(a.transpose(2, 0, 1))
        x = a.astype(np.float64)
        if to_rgb:
            x = np.flip(x, axis=c_axis)
        shape = [-1, 1, 1] if fmt == "CHW" else [1, 1, -1]
        want = (x - np.reshape(mean, shape)) / np.reshape(std, shape)
        got = T.functional.normalize(a, mean, std, fmt, to_rgb)
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        for t in (oar.to_tensor(a.astype(np.float32)), oar.to_tensor(a)):
            out = T.functional.normalize(t, mean, std, fmt, to_rgb)
            assert isinstance(out, oar.Tensor) and out.dtype == oar.float32
            np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    flat = img(5, 6, 3)[:, :, 0]
    np.testing.assert_allclose(T.functional.normalize(flat, 3.0, 2.0, fmt), (flat - 3.0) / 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match="normalize: mean must have 1 or 3 values, got 2"):
        T.functional.normalize(img(5, 6, 3) if fmt == "HWC" else img(3, 5, 6), [1.0, 2.0], 1.0, fmt)


def test_resize_bilinear_matches_reference():
    a = img(5, 7, 2, np.float32)
    out = T.Resize((9, 4))(a)
    assert out.shape == (9, 4, 2) and out.dtype == np.float32

    def ref_axis(x, n, axis):
        m = x.shape[axis]
        s = m / n
        res = []
        for i in range(n):
            src = min(max((i + 0.5) * s - 0.5, 0), m - 1)
            lo = int(np.floor(src))
            hi = min(lo + 1, m - 1)
            w = src - lo
            res.append(np.take(x, lo, axis) * (1 - w) + np.take(x, hi, axis) * w)
        return np.stack(res, axis)

    np.testing.assert_allclose(out, ref_axis(ref_axis(a.astype(np.float64), 9, 0), 4, 1), rtol=1e-5)
    assert T.Resize(10)(img(6, 8)).shape == (10, 13, 3)  # shorter side -> 10
    near = T.Resize((2, 2), interpolation="nearest")(np.arange(16, dtype=np.uint8).reshape(4, 4))
    np.testing.assert_array_equal(near, [[0, 2], [8, 10]])
    u8 = T.Resize((3, 3))(img())
    assert u8.dtype == np.uint8
    with pytest.raises(ValueError, match="interpolation"):
        T.Resize(3, interpolation="cubic")(img())


def _bilinear_ref(x, oh, ow):
    """Separable half-pixel bilinear resize in float64 (cv2's INTER_LINEAR)."""
    def axis(x, n, ax):
        m = x.shape[ax]
        src = np.clip((np.arange(n) + 0.5) * (m / n) - 0.5, 0, m - 1)
        lo = np.floor(src).astype(np.int64)
        hi = np.minimum(lo + 1, m - 1)
        shape = [1] * x.ndim
        shape[ax] = n
        w = (src - lo).reshape(shape)
        return np.take(x, lo, ax) * (1 - w) + np.take(x, hi, ax) * w
    return axis(axis(x.astype(np.float64), oh, 0), ow, 1)


@pytest.mark.parametrize("shape,size", [((375, 500, 3), 256), ((7, 5, 4), (13, 3)), ((9, 11), (4, 17)),
                                        ((1, 6, 1), (5, 1)), ((6, 8, 3), (6, 8))])
def test_resize_bilinear_arrays_and_tensors(shape, size):
    # The interpolate kernel's bilinear resize against the float64 reference: uint8 rounds to
    # the reference's nearest value (one off only where the reference sits at .5 within float32's
    # error), float64 and int32 images exactly, float32 within its rounding; CHW Tensors alike.
    rng = np.random.default_rng(sum(shape))
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    out = T.functional.resize(a, size)
    oh, ow = out.shape[:2]
    if isinstance(size, int):
        assert min(oh, ow) == size
    ref = _bilinear_ref(a, oh, ow)
    assert out.dtype == np.uint8 and out.shape == ref.shape
    off = np.abs(out.astype(np.int64) - np.rint(ref))
    assert off.max() <= 1 and np.all(np.abs(ref[off > 0] % 1 - 0.5) < 1e-4)
    f64 = rng.standard_normal(shape)
    np.testing.assert_allclose(T.functional.resize(f64, (oh, ow)), _bilinear_ref(f64, oh, ow), rtol=1e-12,
                               atol=1e-12)
    big = rng.integers(-2**30, 2**30, shape).astype(np.int32)  # beyond float32's exact integers
    np.testing.assert_array_equal(T.functional.resize(big, (oh, ow)), np.rint(_bilinear_ref(big, oh, ow)))
    f32 = f64.astype(np.float32)
    got = T.functional.resize(f32, (oh, ow))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, _bilinear_ref(f32, oh, ow), rtol=1e-5, atol=1e-5)
    chw = f32.transpose(2, 0, 1) if f32.ndim == 3 else f32
    t = T.functional.resize(oar.to_tensor(chw), (oh, ow))
    assert isinstance(t, oar.Tensor) and t.dtype == oar.float32
    want = _bilinear_ref(f32, oh, ow)
    np.testing.assert_allclose(t.numpy(), want.transpose(2, 0, 1) if want.ndim == 3 else want, rtol=1e-5,
                               atol=1e-5)


def test_resize_empty_image():
    a = np.zeros((0, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="resize"):
        T.functional.resize(a, (2, 2))


def test_crops_flips_pad_transpose():
    a = img(6, 8)
    c = T.CenterCrop(4)(a)
    np.testing.assert_array_equal(c, a[1:5, 2:6])
    with pytest.raises(ValueError, match="exceeds"):
        T.CenterCrop(10)(a)
    np.random.seed(0)
    r = T.RandomCrop((3, 5))(a)
    assert r.shape == (3, 5, 3)
    found = any(np.array_equal(r, a[i : i + 3, j : j + 5]) for i in range(4) for j in range(4))
    assert found
    p = T.RandomCrop(8, padding=1)(a)
    assert p.shape == (8, 8, 3)
    assert T.RandomCrop((10, 10), pad_if_needed=True)(a).shape == (10, 10, 3)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(1.0)(a), a[:, ::-1])
    np.testing.assert_array_equal(T.RandomVerticalFlip(1.0)(a), a[::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(0.0)(a), a)
    padded = T.Pad((1, 2, 3, 4), fill=7)(a)
    assert padded.shape == (6 + 2 + 4, 8 + 1 + 3, 3) and padded[0, 0, 0] == 7
    np.testing.assert_array_equal(padded[2:8, 1:9], a)
    refl = T.Pad(2, padding_mode="reflect")(a)
    np.testing.assert_array_equal(refl, np.pad(a, [(2, 2), (2, 2), (0, 0)], mode="reflect"))
    assert T.Transpose()(a).shape == (3, 6, 8)
    with pytest.raises(ValueError, match="padding_mode"):
        T.Pad(1, padding_mode="wrap")(a)


def test_compose_and_seeded_randomness():
    tf = T.Compose(
        [T.RandomCrop(4), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)]
    )
    oar.seed(3)
    x = tf(img())
    oar.seed(3)
    y = tf(img())
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    assert x.shape == [3, 4, 4]
    out = tf((img(), 5))
    assert out[1] == 5 and out[0].shape == [3, 4, 4]


def write_idx(path, arr, gz=False):
    codes = {np.dtype(np.uint8): 0x08}
    header = bytes([0, 0, codes[arr.dtype], arr.ndim]) + struct.pack(
        ">" + "I" * arr.ndim, *arr.shape
    )
    data = header + arr.tobytes()
    (gzip.open if gz else open)(path, "wb").write(data)


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_from_idx_files(tmp_path, gz):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(5, 28, 28)).astype(np.uint8)
    labels = rng.integers(0, 10, size=5).astype(np.uint8)
    ext = ".gz" if gz else ""
    write_idx(tmp_path / f"img{ext}", images, gz)
    write_idx(tmp_path / f"lab{ext}", labels, gz)
    ds = MNIST(str(tmp_path / f"img{ext}"), str(tmp_path / f"lab{ext}"), mode="test")
    assert len(ds) == 5
    x, y = ds[2]
    assert x.dtype == np.float32 and x.shape == (28, 28) and y.dtype == np.int64 and y.shape == (1,)
    np.testing.assert_array_equal(x, images[2])
    assert int(y[0]) == labels[2]
    tds = FashionMNIST(
        str(tmp_path / f"img{ext}"),
        str(tmp_path / f"lab{ext}"),
        transform=T.Compose([T.Normalize(127.5, 127.5, "HWC"), T.ToTensor()]),
    )
    t, _ = tds[0]
    assert t.shape == [1, 28, 28]
    xb, yb = next(iter(oar.io.DataLoader(ds, batch_size=4)))
    assert xb.shape == [4, 28, 28] and yb.shape == [4, 1]


def test_mnist_errors(tmp_path):
    with pytest.raises(ValueError, match="never downloads"):
        MNIST()
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    write_idx(tmp_path / "lab", np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="magic"):
        MNIST(str(tmp_path / "bad"), str(tmp_path / "lab"))
    write_idx(tmp_path / "img", np.zeros((3, 28, 28), np.uint8))
    (tmp_path / "trunc").write_bytes((tmp_path / "img").read_bytes()[:100])
    with pytest.raises(ValueError, match="truncated"):
        MNIST(str(tmp_path / "trunc"), str(tmp_path / "lab"))
    write_idx(tmp_path / "lab2", np.zeros(2, np.uint8))
    with pytest.raises(ValueError, match="labels"):
        MNIST(str(tmp_path / "img"), str(tmp_path / "lab2"))


def trainable(net):
    """Trainable parameter count (BatchNorm running stats are non-trainable parameters, as
    in Paddle, so this equals the usual published counts)."""
    return sum(int(np.prod(p.shape)) for p in net.parameters() if not p.stop_gradient)




def test_lenet_shapes_params_and_training_step():
    oar.seed(0)
    net = oar.vision.models.LeNet()
    assert sum(int(np.prod(p.shape)) for p in net.parameters()) == 61610
    out = net(oar.randn([2, 1, 28, 28]))
    assert out.shape == [2, 10]
    res = oar.summary(net, (1, 1, 28, 28))
    assert res["total_params"] == 61610
    assert oar.flops(net, [1, 1, 28, 28]) == 347560  # the value in Paddle's flops docs
    assert oar.vision.models.LeNet(num_classes=0)(oar.randn([1, 1, 28, 28])).shape == [1, 16, 5, 5]


@pytest.mark.parametrize(
    "name,params", [("resnet18", 11689512), ("resnet34", 21797672), ("resnet50", 25557032)]
)
def test_resnet_param_counts_and_forward(name, params):
    net = getattr(oar.vision.models, name)()
    assert trainable(net) == params
    small = getattr(oar.vision.models, name)(num_classes=7)
    small.eval()
    assert small(oar.randn([1, 3, 32, 32])).shape == [1, 7]
    with pytest.raises(ValueError, match="pretrained"):
        getattr(oar.vision.models, name)(pretrained=True)


def test_vgg_and_mobilenet():
    v = oar.vision.models.vgg11(num_classes=5)
    assert trainable(v.features) == 9220480
    v.eval()
    assert v(oar.randn([1, 3, 32, 32])).shape == [1, 5]
    assert len(oar.vision.models.vgg16(batch_norm=True).features) == 44
    m = oar.vision.models.MobileNetV2()
    assert trainable(m) == 3504872
    m2 = oar.vision.models.mobilenet_v2(scale=0.5, num_classes=3)
    m2.eval()
    assert m2(oar.randn([1, 3, 32, 32])).shape == [1, 3]


def test_train_lenet_example_runs(tmp_path):
    """The README's main job, shortened: trains, saves, reloads and checks predictions."""
    import os
    import subprocess
    import sys

    pytest.importorskip("sklearn", reason="examples/train_lenet.py needs scikit-learn")
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "train_lenet.py")
    out = subprocess.run(
        [
            sys.executable,
            script,
            "--epochs",
            "3",
            "--min-accuracy",
            "0.9",
            "--save-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "predictions identical" in out.stdout and "Epoch 3/3" in out.stdout
    assert (tmp_path / "lenet.pdparams").exists() and (tmp_path / "lenet.pdopt").exists()
