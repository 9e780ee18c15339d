"""paddle.MmapStorage: a file mapped into memory (numpy.memmap, read-only), read as tensors
of any dtype by element slices (the weights of a .safetensors file, a raw dump)."""
import os

import numpy as np

__all__ = ["MmapStorage"]


class MmapStorage:
    """MmapStorage(filename, nbytes): maps the first nbytes of filename."""

    def __init__(self, filename, nbytes):
        op = "MmapStorage"
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"{op}: filename must be a path, got {type(filename).__name__}")
        if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or nbytes < 0:
            raise ValueError(f"{op}: nbytes must be an int >= 0, got {nbytes!r}")
        size = os.path.getsize(filename)
        if nbytes > size:
            raise ValueError(f"{op}: nbytes={nbytes} is more than the file's {size} bytes "
                             f"({filename})")
        self.filename, self.nbytes = os.fspath(filename), int(nbytes)
        self._map = (np.memmap(self.filename, np.uint8, "r", shape=(self.nbytes,))
                     if nbytes else np.zeros([0], np.uint8))

    def get_slice(self, dtype="uint8", start=0, stop=-1, step=1):
        """Elements [start:stop:step] of the mapping read as `dtype` (stop=-1: to the end)."""
        import oar
        from ._dtype import convert_dtype
        op = "MmapStorage.get_slice"
        dt = convert_dtype(dtype)
        npdt = np.dtype(dt.name if dt.name != "bfloat16" else "uint16")
        count = self.nbytes // npdt.itemsize
        for n, v in (("start", start), ("stop", stop), ("step", step)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise TypeError(f"{op}: {n} must be an int, got {v!r}")
        stop = count if stop == -1 else stop
        if step <= 0 or not 0 <= start <= stop <= count:
            raise ValueError(f"{op}: need 0 <= start <= stop <= {count} elements of {dt.name} "
                             f"and step > 0, got start={start}, stop={stop}, step={step}")
        vals = np.array(self._map[:count * npdt.itemsize].view(npdt)[start:stop:step])
        t = oar.to_tensor(vals)
        return t.view(dt) if dt.name == "bfloat16" else t
