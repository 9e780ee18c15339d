"""MNIST and FashionMNIST from IDX files (optionally gzip-compressed), as Paddle's
paddle.vision.datasets.MNIST with the cv2 (NumPy) backend: image [28, 28] float32, label
int64 of shape [1]."""

import gzip
import struct

import numpy as np

from ...io import Dataset

_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path):
    """The array stored in an IDX file (magic 0x0000TTNN: type TT, NN dimensions)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise ValueError(f"read_idx: '{path}' is not an IDX file (bad magic number)")
    ndim = data[3]
    if len(data) < 4 + 4 * ndim:
        raise ValueError(f"read_idx: '{path}' is truncated (header)")
    dims = struct.unpack(">" + "I" * ndim, data[4 : 4 + 4 * ndim])
    dt = np.dtype(_IDX_TYPES[data[2]])
    n = int(np.prod(dims)) if dims else 1
    body = data[4 + 4 * ndim :]
    if len(body) < n * dt.itemsize:
        raise ValueError(
            f"read_idx: '{path}' is truncated: needs {n * dt.itemsize} data bytes, has {len(body)}"
        )
    return np.frombuffer(body, dtype=dt, count=n).reshape(dims).astype(dt.newbyteorder("="))


class MNIST(Dataset):
    NAME = "mnist"

    def __init__(
        self,
        image_path=None,
        label_path=None,
        mode="train",
        transform=None,
        download=True,
        backend=None,
    ):
        cls = type(self).__name__
        if mode.lower() not in ("train", "test"):
            raise ValueError(f"{cls}: mode must be 'train' or 'test', got '{mode}'")
        if backend not in (None, "cv2"):
            raise ValueError(f"{cls}: only the NumPy ('cv2') backend is available, got '{backend}'")
        if image_path is None or label_path is None:
            raise ValueError(
                f"{cls}: give image_path and label_path (IDX files); this build "
                "never downloads datasets"
            )
        self.mode, self.transform, self.backend, self.dtype = (
            mode.lower(),
            transform,
            "cv2",
            "float32",
        )
        images = read_idx(image_path)
        labels = read_idx(label_path)
        if images.ndim != 3:
            raise ValueError(
                f"{cls}: '{image_path}' must hold [N, rows, cols] images, got shape "
                f"{list(images.shape)}"
            )
        if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
            raise ValueError(
                f"{cls}: {images.shape[0]} images but labels of shape {list(labels.shape)}"
            )
        self.images = images.astype(np.float32)
        self.labels = labels.astype(np.int64).reshape(-1, 1)

    def __getitem__(self, idx):
        image, label = self.images[idx], self.labels[idx]
        if self.transform is not None:
            image = self.transform(image)
        if isinstance(image, np.ndarray):
            image = image.astype(self.dtype)
        return image, label.astype("int64")

    def __len__(self):
        return len(self.labels)


class FashionMNIST(MNIST):
    NAME = "fashion-mnist"
