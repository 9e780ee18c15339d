"""Protobuf text format for DistributedStrategy, without protobuf: scalars as `name: value`,
repeated fields as one line per item, nested messages as `name { ... }`."""
import json
import re

__all__ = []


def _scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)  # a double-quoted string with C-style escapes
    return repr(v)


def dump(fields, indent=0):
    """fields (name -> scalar, list or nested dict) as text format."""
    pad, lines = "  " * indent, []
    for name, value in fields.items():
        if isinstance(value, dict):
            lines.append(f"{pad}{name} {{\n{dump(value, indent + 1)}{pad}}}\n")
        elif isinstance(value, list):
            lines.extend(f"{pad}{name}: {_scalar(v)}\n" for v in value)
        else:
            lines.append(f"{pad}{name}: {_scalar(value)}\n")
    return "".join(lines)


_TOKEN = re.compile(r'\s*(?:(#[^\n]*)|("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|([{}:])|([^\s{}:"\']+))')


def _tokens(text, where):
    pos, line = 0, 1
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                return
            raise ValueError(f"{where}:{line}: cannot read {text[pos:pos + 20]!r}")
        line += text.count("\n", pos, m.end())
        pos = m.end()
        if m.group(1) is None:
            yield line, m.group(2) or m.group(3) or m.group(4)


def _convert(tok, default, where, line, name):
    try:
        if isinstance(default, bool):
            if tok not in ("true", "false", "True", "False", "1", "0"):
                raise ValueError
            return tok in ("true", "True", "1")
        if isinstance(default, str):
            if tok[0] not in "\"'":
                raise ValueError
            return json.loads('"' + tok[1:-1].replace('"', '\\"').replace("\\'", "'") + '"'
                              if tok[0] == "'" else tok)
        if isinstance(default, int):
            return int(tok)
        return float(tok)
    except ValueError:
        raise ValueError(f"{where}:{line}: field {name!r} expects a {type(default).__name__}, got {tok}") from None


def parse(text, schema, where):
    """The fields of text, checked against schema (name -> default; list: repeated; dict: message)."""
    toks = list(_tokens(text, where))
    pos = 0

    def message(schema, closing):
        nonlocal pos
        out = {}
        while pos < len(toks):
            line, name = toks[pos]
            if name == "}":
                if not closing:
                    raise ValueError(f"{where}:{line}: unmatched '}}'")
                pos += 1
                return out
            if name not in schema:
                raise ValueError(f"{where}:{line}: unknown field {name!r} (known: {sorted(schema)})")
            default = schema[name]
            pos += 1
            nxt = toks[pos][1] if pos < len(toks) else None
            if nxt == ":":
                pos += 1
                nxt = toks[pos][1] if pos < len(toks) else None
            if isinstance(default, dict):
                if nxt != "{":
                    raise ValueError(f"{where}:{line}: field {name!r} is a message: expected '{{'")
                pos += 1
                out.setdefault(name, {}).update(message(default, True))
                continue
            if nxt is None or nxt in "{}:":
                raise ValueError(f"{where}:{line}: field {name!r} has no value")
            pos += 1
            if isinstance(default, list):
                out.setdefault(name, []).append(_convert(nxt, default[0], where, line, name))
            else:
                out[name] = _convert(nxt, default, where, line, name)
        if closing:
            raise ValueError(f"{where}: a message is not closed with '}}'")
        return out

    return message(schema, False)
