"""The few etcd v3 protobuf messages the exporter reads and the tests' stand-in server answers.

Why by hand: the exporter needs four messages (status, member list, snapshot pieces and their
header) of etcd's rpc.proto. The generated code of the unmaintained Python etcd3 clients pins
protobuf 3; the wire format itself is stable and small: a field is a varint key (number << 3 |
type) then a varint (type 0) or a length and that many bytes (type 2).
"""

from __future__ import annotations

VARINT, LENGTH = 0, 2


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data: bytes) -> dict[int, list]:
    """Every field of one message: number -> its values (ints, or memoryviews of bytes)."""
    found: dict[int, list] = {}
    view = memoryview(data)
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        if key & 7 == VARINT:
            value, at = _varint(data, at)
        elif key & 7 == LENGTH:
            size, at = _varint(data, at)
            value, at = view[at:at + size], at + size
        else:
            raise ValueError(f"protobuf wire type {key & 7} is not used by etcd's messages")
        found.setdefault(key >> 3, []).append(value)
    return found


def first(found: dict[int, list], number: int, default=0):
    return found[number][0] if number in found else default


def text(found: dict[int, list], number: int) -> str:
    return bytes(first(found, number, b"")).decode()
