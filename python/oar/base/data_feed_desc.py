"""paddle.base.DataFeedDesc: the description of slot-format training files (Paddle's
data_feed.proto DataFeedDesc message) in protobuf text format, which the datasets of
paddle.base.dataset read their files by.

Only the message's fields that Paddle's Python API sets are known here; the text parser
accepts exactly them (an unknown field is an error naming it, as protobuf's is)."""

_SCALARS = {  # DataFeedDesc's scalar fields and their types, in the proto's order
    "name": str, "batch_size": int, "pipe_command": str, "thread_num": int, "rank_offset": str,
    "pv_batch_size": int, "input_type": int, "so_parser_name": str,
}
_SLOT_FIELDS = {"name": str, "type": str, "is_dense": bool, "is_used": bool, "shape": int}
_SLOT_TYPES = ("float", "uint64", "uint32")


class Slot:
    """One slot (one input variable) of a MultiSlot file."""

    def __init__(self, name="", type="uint64", is_dense=False, is_used=False, shape=None):  # noqa: A002
        self.name, self.type, self.is_dense, self.is_used = name, type, is_dense, is_used
        self.shape = list(shape or [])

    def _text(self, indent):
        pad = " " * indent
        lines = [f'{pad}name: "{self.name}"', f'{pad}type: "{self.type}"',
                 f"{pad}is_dense: {str(self.is_dense).lower()}", f"{pad}is_used: {str(self.is_used).lower()}"]
        lines += [f"{pad}shape: {d}" for d in self.shape]
        return lines


class FeedDescMessage:
    """The DataFeedDesc message: scalar fields and multi_slot_desc's slots."""

    def __init__(self):
        self.name = ""
        self.batch_size = 32
        self.pipe_command = "cat"
        self.thread_num = 0
        self.rank_offset = ""
        self.pv_batch_size = 32
        self.input_type = 0
        self.so_parser_name = ""
        self.slots = []
        self._set = {"pipe_command"}  # fields printed by text(): those given a value

    def __setattr__(self, key, value):
        object.__setattr__(self, key, value)
        if key in _SCALARS and "_set" in self.__dict__:
            self._set.add(key)

    def text(self):
        """The message in protobuf text format (fields in the proto's order)."""
        lines = []
        for field, kind in _SCALARS.items():
            if field == "pipe_command" and self.slots:  # multi_slot_desc is field 3
                lines.append("multi_slot_desc {")
                for s in self.slots:
                    lines += ["  slots {"] + s._text(4) + ["  }"]
                lines.append("}")
            if field in self._set:
                v = getattr(self, field)
                lines.append(f'{field}: "{v}"' if kind is str else f"{field}: {v}")
        return "\n".join(lines) + "\n"


def _tokens(text, where):
    import re

    pos, out = 0, []
    pattern = re.compile(r'\s+|#[^\n]*|"((?:[^"\\]|\\.)*)"|([A-Za-z_][A-Za-z0-9_]*)|(-?[0-9]+)|([{}:])')
    while pos < len(text):
        m = pattern.match(text, pos)
        if m is None:
            raise ValueError(f"{where}: cannot parse the text at offset {pos}: {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.group(1) is not None:
            out.append(("str", bytes(m.group(1), "utf-8").decode("unicode_escape")))
        elif m.group(2) is not None:
            out.append(("id", m.group(2)))
        elif m.group(3) is not None:
            out.append(("int", int(m.group(3))))
        elif m.group(4) is not None:
            out.append((m.group(4), m.group(4)))
    return out


def _value(kind, tok, field, where):
    typ, v = tok
    if kind is str and typ == "str":
        return v
    if kind is int and typ == "int":
        return v
    if kind is bool and typ == "id" and v in ("true", "false"):
        return v == "true"
    raise ValueError(f"{where}: field '{field}' expects a {kind.__name__} value, got {v!r}")


def parse_text(text, where="DataFeedDesc"):
    """A FeedDescMessage from protobuf text format."""
    toks = _tokens(text, where)
    msg, i = FeedDescMessage(), 0

    def expect(i, typ):
        if i >= len(toks) or toks[i][0] != typ:
            got = toks[i][1] if i < len(toks) else "the end of the text"
            raise ValueError(f"{where}: expected '{typ}', got {got!r}")
        return i + 1

    def block(i, fields, target):
        i = expect(i, "{")
        while i < len(toks) and toks[i][0] != "}":
            if toks[i][0] != "id":
                raise ValueError(f"{where}: expected a field name, got {toks[i][1]!r}")
            field = toks[i][1]
            if target is None:  # multi_slot_desc: only repeated slots
                if field != "slots":
                    raise ValueError(f"{where}: multi_slot_desc has no field '{field}' (it has 'slots')")
                slot = Slot()
                i = block(i + 1, _SLOT_FIELDS, slot)
                msg.slots.append(slot)
                continue
            if field not in fields:
                raise ValueError(f"{where}: slots have no field '{field}' (fields: {sorted(fields)})")
            i = expect(i + 1, ":")
            if i >= len(toks):
                raise ValueError(f"{where}: field '{field}' has no value")
            v = _value(fields[field], toks[i], field, where)
            if field == "shape":
                target.shape.append(v)
            else:
                setattr(target, field, v)
            i += 1
        return expect(i, "}")

    while i < len(toks):
        if toks[i][0] != "id":
            raise ValueError(f"{where}: expected a field name, got {toks[i][1]!r}")
        field = toks[i][1]
        if field == "multi_slot_desc":
            i = block(i + 1, None, None)
            continue
        if field not in _SCALARS:
            raise ValueError(f"{where}: DataFeedDesc has no field '{field}' (fields: "
                             f"{sorted(list(_SCALARS) + ['multi_slot_desc'])})")
        i = expect(i + 1, ":")
        if i >= len(toks):
            raise ValueError(f"{where}: field '{field}' has no value")
        setattr(msg, field, _value(_SCALARS[field], toks[i], field, where))
        i += 1
    for s in msg.slots:
        if s.type not in _SLOT_TYPES:
            raise ValueError(f"{where}: slot '{s.name}' has type '{s.type}'; slot types are {list(_SLOT_TYPES)}")
    return msg


class DataFeedDesc:
    """A data feed description read from a protobuf text file (Paddle's data_feed.proto);
    batch size, dense and used slots can be changed before training."""

    def __init__(self, proto_file):
        with open(proto_file) as f:
            self.proto_desc = parse_text(f.read(), f"DataFeedDesc('{proto_file}')")
        self._index = {s.name: i for i, s in enumerate(self.proto_desc.slots)}

    def set_batch_size(self, batch_size):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"DataFeedDesc.set_batch_size: batch_size must be an int >= 1, got {batch_size!r}")
        self.proto_desc.batch_size = batch_size

    def _slots(self, names, who):
        if self.proto_desc.name != "MultiSlotDataFeed":
            raise ValueError(f"DataFeedDesc.{who}: only a MultiSlotDataFeed has slots, this description is "
                             f"'{self.proto_desc.name}'")
        if isinstance(names, str) or not isinstance(names, (list, tuple)):
            raise TypeError(f"DataFeedDesc.{who}: expected a list of slot names, got {type(names).__name__}")
        for n in names:
            if n not in self._index:
                raise ValueError(f"DataFeedDesc.{who}: no slot named {n!r} (slots: {list(self._index)})")
            yield self.proto_desc.slots[self._index[n]]

    def set_dense_slots(self, dense_slots_name):
        """Slots listed become dense (fed as one fixed-size tensor per instance)."""
        for s in self._slots(dense_slots_name, "set_dense_slots"):
            s.is_dense = True

    def set_use_slots(self, use_slots_name):
        """Slots listed are read for training (others are skipped)."""
        for s in self._slots(use_slots_name, "set_use_slots"):
            s.is_used = True

    def desc(self):
        """The description in protobuf text format."""
        return self.proto_desc.text()
