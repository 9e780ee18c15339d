"""fleet.data_generator: the MultiSlot text a dataset pipe_command writes, checked against
the format written out by hand, batching through generate_batch, and malformed samples."""
import io
import sys

import pytest

import oar.distributed.fleet.data_generator as dg


class Words(dg.MultiSlotDataGenerator):
    def generate_sample(self, line):
        def it():
            ids = [int(x) for x in line.split()]
            if ids:
                yield [("words", ids), ("label", [ids[0] % 2])]
        return it


def _run(gen, text, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    monkeypatch.setattr(sys, "stdout", out)
    gen.run_from_stdin()
    return out.getvalue()


def test_multislot_from_stdin(monkeypatch):
    g = Words()
    assert _run(g, "1 2 3\n\n4 5\n", monkeypatch) == "3 1 2 3 1 1\n2 4 5 1 0\n"
    assert g._proto_info == [("words", "uint64"), ("label", "uint64")]


def test_float_slot_and_string_generator(monkeypatch):
    class F(dg.MultiSlotDataGenerator):
        def generate_sample(self, line):
            def it():
                yield [("x", [1, 2.5])]
            return it
    g = F()
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    g.run_from_memory()  # generate_sample(None), no input read
    assert out.getvalue() == "2 1 2.5\n" and g._proto_info == [("x", "float")]

    class S(dg.MultiSlotStringDataGenerator):
        def generate_sample(self, line):
            def it():
                yield [("w", line.split())]
            return it
    assert _run(S(), "a b\nc\n", monkeypatch) == "2 a b\n1 c\n"


def test_generate_batch_sees_batches(monkeypatch):
    seen = []

    class B(Words):
        def generate_batch(self, samples):
            seen.append(len(samples))
            def it():
                for s in samples:
                    yield [(name, list(reversed(v))) for name, v in s]
            return it
    g = B()
    g.set_batch(2)
    assert _run(g, "1 2\n3 4\n5 6\n", monkeypatch) == "2 2 1 1 1\n2 4 3 1 1\n2 6 5 1 1\n"
    assert seen == [2, 1]
    with pytest.raises(ValueError, match="set_batch: batch_size must be a positive int, got 0"):
        g.set_batch(0)


def test_malformed_samples():
    g = dg.MultiSlotDataGenerator()
    with pytest.raises(ValueError, match="a sample must be a list or tuple"):
        g._gen_str("1 2")
    with pytest.raises(ValueError, match="slot 'w' is empty"):
        g._gen_str([("w", [])])
    with pytest.raises(ValueError, match="slot 'w': elements must be int or float, got 'a'"):
        g._gen_str([("w", ["a"])])
    g._gen_str([("w", [1])])
    with pytest.raises(ValueError, match="slot 0 is named 'v', the first sample named it 'w'"):
        g._gen_str([("v", [1])])
    with pytest.raises(ValueError, match="a sample has 2 slots, the first had 1"):
        g._gen_str([("w", [1]), ("v", [1])])
    with pytest.raises(NotImplementedError, match="use MultiSlotDataGenerator"):
        dg.DataGenerator()._gen_str([("w", [1])])
    with pytest.raises(NotImplementedError, match="override it"):
        dg.DataGenerator().generate_sample("x")
