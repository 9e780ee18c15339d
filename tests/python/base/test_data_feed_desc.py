"""paddle.base.DataFeedDesc: protobuf text in, changed, out."""
import pytest

import oar

PROTO = '''name: "MultiSlotDataFeed"
batch_size: 2
multi_slot_desc {
    slots {
        name: "words"
        type: "uint64"
        is_dense: false
        is_used: true
    }
    slots {
        name: "label"
        type: "uint64"
        is_dense: false
        is_used: false
    }
}'''


def _desc(tmp_path, text=PROTO):
    p = tmp_path / "data.proto"
    p.write_text(text)
    return oar.base.DataFeedDesc(str(p))


def test_parse_change_and_print(tmp_path):
    d = _desc(tmp_path)
    assert [(s.name, s.is_dense, s.is_used) for s in d.proto_desc.slots] == [("words", False, True),
                                                                            ("label", False, False)]
    d.set_batch_size(128)
    d.set_dense_slots(["words"])
    d.set_use_slots(["label"])
    text = d.desc()
    assert "batch_size: 128" in text and text.count("is_used: true") == 2 and "is_dense: true" in text
    # the printed text parses back to the same description
    again = _desc(tmp_path, text)
    assert again.desc() == text


@pytest.mark.parametrize("text, msg", [
    ('name: "MultiSlotDataFeed"\nbatchsize: 2', "DataFeedDesc has no field 'batchsize'"),
    ('batch_size: "two"', "field 'batch_size' expects a int value"),
    ('multi_slot_desc { slots { name: "a" type: "double" } }', "slot 'a' has type 'double'"),
    ('multi_slot_desc { slot { name: "a" } }', "multi_slot_desc has no field 'slot'"),
    ('name: "x"\nmulti_slot_desc {', "expected '}'"),
    ("batch_size: 2 @", "cannot parse the text"),
])
def test_bad_text(tmp_path, text, msg):
    with pytest.raises(ValueError, match=msg):
        _desc(tmp_path, text)


def test_bad_calls(tmp_path):
    d = _desc(tmp_path)
    with pytest.raises(ValueError, match="no slot named 'nope'"):
        d.set_dense_slots(["nope"])
    with pytest.raises(TypeError, match="expected a list of slot names"):
        d.set_use_slots("words")
    with pytest.raises(ValueError, match="batch_size must be an int >= 1, got -1"):
        d.set_batch_size(-1)
    other = _desc(tmp_path, 'name: "PrivateQueueDataFeed"')
    with pytest.raises(ValueError, match="only a MultiSlotDataFeed has slots"):
        other.set_use_slots(["words"])
