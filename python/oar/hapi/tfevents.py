"""A small TensorBoard event-file writer and reader (scalars only), without TensorFlow.

File: a sequence of records, each
    uint64 length | uint32 masked_crc32c(length) | data[length] | uint32 masked_crc32c(data)
(little-endian), where data is a serialized tensorflow.Event protobuf:
    Event { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
    Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
The first record carries file_version "brain.Event:2". The mask is
((crc >> 15) | (crc << 17)) + 0xa282ead8 (mod 2^32).
"""

import os
import socket
import struct
import time


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    t = _TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data):
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


# ---- minimal protobuf encoding
def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _len_field(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def encode_event(wall_time, step=0, file_version=None, scalars=()):
    out = _key(1, 1) + struct.pack("<d", wall_time)
    if step:
        out += _key(2, 0) + _varint(int(step))
    if file_version is not None:
        out += _len_field(3, file_version.encode())
    if scalars:
        summary = b""
        for tag, value in scalars:
            v = _len_field(1, tag.encode()) + _key(2, 5) + struct.pack("<f", float(value))
            summary += _len_field(1, v)
        out += _len_field(5, summary)
    return out


def encode_record(data):
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


class SummaryWriter:
    """Writes scalar summaries to <logdir>/events.out.tfevents.<time>.<host>; TensorBoard
    reads the directory."""

    def __init__(self, logdir, filename_suffix=""):
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}{filename_suffix}"
        self.path = os.path.join(logdir, name)
        self._f = open(self.path, "ab")
        self._f.write(encode_record(encode_event(time.time(), file_version="brain.Event:2")))
        self._f.flush()

    def add_scalar(self, tag, value, step, walltime=None):
        self._f.write(
            encode_record(encode_event(walltime or time.time(), step, scalars=[(tag, value)]))
        )

    def flush(self):
        if not self._f.closed:
            self._f.flush()

    def close(self):
        if not self._f.closed:
            self._f.flush()
            os.fsync(self._f.fileno())
            self._f.close()


# ---- reader (tests, and a quick look at a run without TensorBoard)
def _read_varint(buf, i):
    shift = n = 0
    while True:
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _fields(buf):
    i = 0
    while i < len(buf):
        key, i = _read_varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _read_varint(buf, i)
        elif wire == 1:
            v, i = buf[i : i + 8], i + 8
        elif wire == 5:
            v, i = buf[i : i + 4], i + 4
        elif wire == 2:
            n, i = _read_varint(buf, i)
            v, i = buf[i : i + n], i + n
        else:
            raise ValueError(f"tfevents: unsupported protobuf wire type {wire}")
        yield field, wire, v


def read_records(path):
    """Yields each record's data, checking both CRCs; ValueError on corruption."""
    with open(path, "rb") as f:
        raw = f.read()
    i = 0
    while i < len(raw):
        if i + 12 > len(raw):
            raise ValueError(f"tfevents: '{path}' is truncated at byte {i}")
        header = raw[i : i + 8]
        (n,) = struct.unpack("<Q", header)
        (hcrc,) = struct.unpack("<I", raw[i + 8 : i + 12])
        if hcrc != masked_crc32c(header):
            raise ValueError(f"tfevents: bad length checksum at byte {i} of '{path}'")
        data = raw[i + 12 : i + 12 + n]
        if len(data) < n or i + 16 + n > len(raw):
            raise ValueError(f"tfevents: '{path}' is truncated at byte {i}")
        (dcrc,) = struct.unpack("<I", raw[i + 12 + n : i + 16 + n])
        if dcrc != masked_crc32c(data):
            raise ValueError(f"tfevents: bad data checksum at byte {i} of '{path}'")
        yield data
        i += 16 + n


def read_scalars(path):
    """[(tag, step, value, wall_time)] of every scalar in an event file."""
    out = []
    for data in read_records(path):
        wall, step, summary = 0.0, 0, None
        for field, wire, v in _fields(data):
            if field == 1 and wire == 1:
                (wall,) = struct.unpack("<d", v)
            elif field == 2 and wire == 0:
                step = v
            elif field == 5 and wire == 2:
                summary = v
        if summary is None:
            continue
        for field, _, value in _fields(summary):
            if field != 1:
                continue
            tag, val = None, None
            for f2, w2, v2 in _fields(value):
                if f2 == 1:
                    tag = v2.decode()
                elif f2 == 2 and w2 == 5:
                    (val,) = struct.unpack("<f", v2)
            out.append((tag, step, val, wall))
    return out
