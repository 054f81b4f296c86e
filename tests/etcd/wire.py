"""Protobuf encoding for the tests' stand-in etcd server (the exporter only decodes)."""

from __future__ import annotations

from dr.exporters.etcd.protowire import LENGTH, VARINT


def encode(*pairs: tuple[int, int | bytes | str]) -> bytes:
    """A message of (field number, value) pairs: ints as varints, bytes and str length-prefixed."""
    out = bytearray()
    for number, value in pairs:
        if isinstance(value, int):
            out += _encode_varint(number << 3 | VARINT) + _encode_varint(value)
        else:
            raw = value.encode() if isinstance(value, str) else bytes(value)
            out += _encode_varint(number << 3 | LENGTH) + _encode_varint(len(raw)) + raw
    return bytes(out)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
