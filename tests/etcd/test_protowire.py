"""The protobuf wire decoding the exporter reads etcd's answers with (real answers are read in
test_etcd_exporter.py; these cover the encodings a small cluster does not produce)."""

from __future__ import annotations

import pytest

from dr.exporters.etcd.protowire import fields, first, text
from tests.etcd import wire


def test_large_ids_repeated_fields_and_nested_messages_decode():
    member = wire.encode((1, 2**64 - 1), (2, "cp1"), (3, "http://a:2380"), (3, "http://b:2380"))
    found = fields(wire.encode((1, wire.encode((3, 300))), (2, member), (2, wire.encode((2, "cp2")))))
    assert first(fields(first(found, 1)), 3) == 300
    one, two = (fields(m) for m in found[2])
    assert first(one, 1) == 2**64 - 1 and text(one, 2) == "cp1" and text(two, 2) == "cp2"
    assert [bytes(u) for u in one[3]] == [b"http://a:2380", b"http://b:2380"]
    assert first(two, 1) == 0 and text(two, 4) == ""  # absent fields read as their defaults


def test_a_blob_is_a_view_of_the_message_not_a_copy():
    message = wire.encode((2, 5), (3, b"\x00" * 40000))
    blob = first(fields(message), 3)
    assert isinstance(blob, memoryview) and blob.obj is message and len(blob) == 40000


def test_a_wire_type_etcd_does_not_use_is_refused():
    with pytest.raises(ValueError, match="wire type 5"):
        fields(bytes([1 << 3 | 5, 0, 0, 0, 0]))
