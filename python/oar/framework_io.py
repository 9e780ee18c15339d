"""oar.save / oar.load: tensors and nested containers in a safe, checksummed file.

The file is a safetensors file (8-byte little-endian header size, a JSON header naming each
tensor's dtype, shape and byte range, then the raw bytes), so other safetensors readers open
it. Its "__metadata__" carries Oar's extras as strings: the nested structure of the saved
object (dicts, lists, tuples, Python scalars; leaves point at tensors by name) and a CRC32 of
the structure and the data. Loading never executes code (Paddle's pickles are read by a
unpickler that builds only arrays and containers, Note [Paddle checkpoints]). Saving writes a temp file
in the target directory, fsyncs it and renames it over the target, so a crash mid-save leaves
the previous file intact. See Note [Checkpoint format] in docs/notes/training_api.md.
"""

import io as _pyio
import json
import mmap
import os
import pickle
import pickletools
import struct
import tempfile

import numpy as np

from . import _C

_FORMAT = "oar.safetensors.v1"
_ST_DTYPES = {  # numpy dtype str -> safetensors dtype
    "bool": "BOOL",
    "int8": "I8",
    "uint8": "U8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "float16": "F16",
    "float32": "F32",
    "float64": "F64",
    "uint16": "U16",
    "uint32": "U32",
    "uint64": "U64",
}
_NP_DTYPES = {v: k for k, v in _ST_DTYPES.items()}
_NP_DTYPES["BF16"] = "bfloat16"

# Objects of higher layers saved as bytes plus JSON info (oar.static registers its Program):
# kind -> (claims(obj) -> bool, encode(obj) -> (bytes, info), decode(bytes, info) -> obj).
_codecs = {}


def register_codec(kind, claims, encode, decode):
    """Lets oar.save / oar.load store objects `claims` accepts as `encode`'s bytes and
    JSON-able info (kept in the checksummed file as a uint8 tensor), rebuilt by `decode`."""
    _codecs[kind] = (claims, encode, decode)


def _encode(obj, tensors, path):
    """Returns the JSON node for obj; appends (name, kind, array) for tensors and arrays."""
    if isinstance(obj, _C.Tensor):
        name = f"t{len(tensors)}"
        if obj.dtype.name == "bfloat16":
            arr = np.asarray(obj.numpy(), order="C")  # uint16 bit patterns
            tensors.append((name, "BF16", arr))
        else:
            arr = np.asarray(obj.numpy(), order="C")  # a view when contiguous: no copy
            tensors.append((name, _ST_DTYPES[arr.dtype.name], arr))
        return {"tensor": name, "stop_gradient": bool(obj.stop_gradient)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.name not in _ST_DTYPES:
            raise TypeError(f"oar.save: cannot save a NumPy array of dtype {obj.dtype} at {path}")
        name = f"t{len(tensors)}"
        tensors.append((name, _ST_DTYPES[obj.dtype.name], np.asarray(obj, order="C")))
        return {"ndarray": name}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not (k is None or isinstance(k, (str, int, float, bool))):
                raise TypeError(
                    f"oar.save: dict key {k!r} at {path} must be a str, int, float, bool or None"
                )
            items.append([k, _encode(v, tensors, f"{path}[{k!r}]")])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, tensors, f"{path}[{i}]") for i, v in enumerate(obj)]}
    if isinstance(obj, np.generic):
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if hasattr(obj, "__array__") and not isinstance(obj, type):
        # an array view such as a static scope's tensor (Paddle saves the LoDTensor):
        # saved as a tensor of its current values
        arr = np.asarray(obj)
        if arr.dtype.name not in _ST_DTYPES:
            raise TypeError(f"oar.save: cannot save {type(obj).__name__} of dtype {arr.dtype} at {path}")
        return _encode(_C.to_tensor(np.ascontiguousarray(arr), None, None, True), tensors, path)
    for kind, (claims, encode, _) in _codecs.items():
        if claims(obj):
            data, info = encode(obj)
            name = f"t{len(tensors)}"
            tensors.append((name, "U8", np.frombuffer(bytes(data), dtype=np.uint8)))
            return {"object": {"kind": kind, "data": name, "info": info}}
    raise TypeError(
        f"oar.save: cannot save an object of type {type(obj).__name__} at {path}; "
        "only Tensors, NumPy arrays, dicts, lists, tuples, Python scalars and static Programs are saved"
    )


def _serialize(obj):
    tensors = []
    structure = json.dumps(_encode(obj, tensors, "obj"), separators=(",", ":"))
    header, offset, chunks = {}, 0, []
    for name, st_dtype, arr in tensors:
        raw = memoryview(arr.reshape(-1)).cast("B") if arr.size else b""
        header[name] = {
            "dtype": st_dtype,
            "shape": list(arr.shape),
            "data_offsets": [offset, offset + len(raw)],
        }
        offset += len(raw)
        chunks.append(raw)
    crc = _C.inference.crc32(_canonical(header) + structure.encode())
    for c in chunks:
        crc = _C.inference.crc32(c, crc)
    header["__metadata__"] = {"format": _FORMAT, "structure": structure, "crc32": str(crc)}
    hbytes = json.dumps(header, separators=(",", ":")).encode()
    hbytes += b" " * (-len(hbytes) % 8)  # data starts 8-byte aligned, as safetensors pads
    return [struct.pack("<Q", len(hbytes)), hbytes] + chunks


def save(obj, path, protocol=4, **configs):
    """Saves a Tensor, a state dict, or nested dicts/lists/tuples of Tensors, arrays and Python
    scalars to `path` atomically."""
    parts = _serialize(obj)
    if hasattr(path, "write"):
        for p in parts:
            path.write(p)
        return
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"oar.save: '{path}' is a directory; give a file name")
    _write_atomic(path, parts)


def _write_atomic(path, parts):
    """Writes the byte strings `parts` to `path` through a temp file in its folder, fsynced
    and renamed over it (the rename made durable too): readers see the old file or the new."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for p in parts:
                f.write(p)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _canonical(entries):
    """The tensor entries of a header as checksummed bytes (names, dtypes, shapes, offsets)."""
    return json.dumps(entries, sort_keys=True, separators=(",", ":")).encode()


def _corrupt(path, why):
    return ValueError(f"oar.load: '{path}' is not a valid Oar/safetensors checkpoint: {why}")


class CheckpointNotFoundError(FileNotFoundError, ValueError):
    """oar.load of a path that does not exist: a FileNotFoundError, and a ValueError as
    Paddle raises there (code written for Paddle catches ValueError)."""


def load(path, **configs):
    """Loads what oar.save wrote (or any safetensors file, as a dict of Tensors). Tensors come
    back as Tensors with stop_gradient=True whatever they had when saved, as Paddle's (or NumPy
    arrays with return_numpy=True); a truncated or corrupt file raises ValueError naming the path."""
    return_numpy = bool(configs.get("return_numpy", False))
    if hasattr(path, "read"):
        return _load_buffer(path.read(), getattr(path, "name", "<file object>"), return_numpy)
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CheckpointNotFoundError(f"oar.load: '{path}' does not exist")
    if os.path.isdir(path):
        raise ValueError(f"oar.load: '{path}' is a directory, not a checkpoint file")
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size < 8:
            return _load_buffer(f.read(), path, return_numpy)
        # Map the file: tensors are copied once, from the page cache into their storage.
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return _load_buffer(mm, path, return_numpy)
    finally:
        try:
            mm.close()
        except BufferError:  # an exception's traceback still holds views; GC closes it
            pass


def _load_buffer(data, path, return_numpy):
    # The header, every byte range and the checksum are checked by the one safetensors
    # reader (inference/predictor/params_reader.h, which the predictor uses too); here the
    # checked ranges only become arrays.
    try:
        entries, start, fmt, structure = _C.inference.parse_safetensors(data, str(path))
    except ValueError as e:
        if bytes(data[:2]) in _PICKLE_MAGIC:  # not safetensors: a paddle.save pickle?
            return _load_paddle_pickle(data, path, return_numpy, e)
        raise ValueError(f"oar.load: {e}") from None
    body = memoryview(data)[start:]
    arrays = {}
    for name, st_dtype, shape, b, e in entries:
        np_dtype = np.dtype("uint16" if st_dtype == "BF16" else _NP_DTYPES[st_dtype])
        if st_dtype == "BOOL":
            # bytes other than 0/1 (a damaged or foreign file) are not bools: the kernels'
            # loads of them are undefined (UBSan), so they are read as byte != 0.
            arr = np.frombuffer(body[b:e], dtype=np.uint8) != 0
        else:
            arr = np.frombuffer(body[b:e], dtype=np_dtype)
        arrays[name] = (st_dtype, arr.reshape(shape))
    if fmt != _FORMAT:  # a plain safetensors file: its tensors in data order
        return {name: _to_value(arrays[name], return_numpy, True) for name, *_ in entries}
    try:
        return _decode(json.loads(structure), arrays, return_numpy)
    except (KeyError, TypeError, ValueError, json.JSONDecodeError) as e:
        raise _corrupt(path, f"malformed structure ({e})") from None


# Note [Paddle checkpoints]: paddle.save writes a pickle (protocol 2-4) of Python containers,
# scalars, strings and NumPy arrays; a Tensor is a (name, array) tuple, bfloat16 as uint16
# bits, and a state dict carries a "StructuredToParameterName@@" name map. oar.load reads
# those with an unpickler that resolves only NumPy's array and dtype constructors and the
# builtin containers, so it still runs no code from the file, and returns what paddle.load
# does: (name, array) tuples and the arrays directly inside the top-level container as
# Tensors (stop_gradient=True), deeper arrays as arrays, the name map dropped.
_PICKLE_MAGIC = {b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05"}
_PICKLE_GLOBALS = {
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("collections", "OrderedDict"),
    ("builtins", "tuple"), ("builtins", "list"), ("builtins", "dict"), ("builtins", "set"),
    ("builtins", "frozenset"), ("builtins", "complex"),
}


class _PaddleUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) not in _PICKLE_GLOBALS:
            raise pickle.UnpicklingError(f"it refers to {module}.{name}; a Paddle checkpoint holds only "
                                         f"arrays, numbers, strings and containers")
        if module.startswith("numpy") and module.endswith("multiarray"):
            try:
                from numpy._core import multiarray
            except ImportError:  # NumPy 1.x
                from numpy.core import multiarray
            return getattr(multiarray, name)
        return super().find_class(module, name)


def _load_paddle_pickle(data, path, return_numpy, safetensors_error):
    raw = bytes(data)
    try:
        # every opcode's length checked first (pickletools reads, never allocates, a claimed
        # 2^60-byte argument), then the restricted unpickler
        for _ in pickletools.genops(raw):
            pass
        obj = _PaddleUnpickler(_pyio.BytesIO(raw)).load()
    except Exception as e:  # noqa: BLE001  (any failure of a foreign file is a bad file)
        raise ValueError(f"oar.load: '{path}' is neither an Oar/safetensors checkpoint "
                         f"({safetensors_error}) nor a Paddle checkpoint pickle "
                         f"({str(e) or type(e).__name__})") from None

    def tensor(arr):
        if return_numpy:
            return arr
        if arr.dtype == np.uint16:  # Paddle has no uint16: these are bfloat16 bits
            return _to_value(("BF16", arr), False, True)
        return _to_value(("", np.ascontiguousarray(arr)), False, True)

    done = {}  # a container shared through the pickle's memo is converted once (no blow-up)

    def conv(v, depth):
        if depth > 100:
            raise ValueError(f"oar.load: '{path}': containers nested over 100 deep")
        if isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], np.ndarray):
            return tensor(v[1])
        if isinstance(v, np.ndarray):
            return tensor(v) if depth <= 1 else v
        if not isinstance(v, (dict, list, tuple)):
            return v
        key = (id(v), depth <= 1)
        if key not in done:
            if isinstance(v, dict):
                done[key] = type(v)((k, conv(x, depth + 1)) for k, x in v.items()
                                    if not (depth == 0 and k == "StructuredToParameterName@@"))
            else:
                done[key] = type(v)(conv(x, depth + 1) for x in v)
        return done[key]

    return conv(obj, 0)


def _to_value(entry, return_numpy, stop_gradient):
    st_dtype, arr = entry
    if st_dtype == "BF16":
        f32 = (arr.astype(np.uint32) << 16).view(np.float32)
        if return_numpy:
            return arr.copy()
        t = _C.to_tensor(f32, None, None, True).astype("bfloat16")
    else:
        if return_numpy:
            return arr.copy()
        t = _C.to_tensor(arr, None, None, True)
    t.stop_gradient = stop_gradient
    return t


def _decode(node, arrays, return_numpy):
    ((kind, val),) = [(k, v) for k, v in node.items() if k != "stop_gradient"]
    if kind == "tensor":  # the saved stop_gradient is not restored: loaded values are data
        return _to_value(arrays[val], return_numpy, True)
    if kind == "ndarray":
        return arrays[val][1].copy()
    if kind == "dict":
        return {k: _decode(v, arrays, return_numpy) for k, v in val}
    if kind == "list":
        return [_decode(v, arrays, return_numpy) for v in val]
    if kind == "tuple":
        return tuple(_decode(v, arrays, return_numpy) for v in val)
    if kind == "value":
        return val
    if kind == "object":
        codec = _codecs.get(val["kind"])
        if codec is None:
            raise ValueError(f"it holds an object of kind '{val['kind']}', which no loaded module reads")
        return codec[2](arrays[val["data"]][1].tobytes(), val["info"])
    raise ValueError(f"unknown node kind '{kind}'")


def _bytes(obj):
    """The serialized bytes of obj (tests, in-memory round trips)."""
    buf = _pyio.BytesIO()
    save(obj, buf)
    return buf.getvalue()
