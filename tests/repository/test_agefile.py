"""dr's age files against pyrage (rage, the Rust implementation) both ways, at the STREAM's chunk
boundaries, and every kind of damage a reader must refuse. tests/repository/test_age_interop.py
checks the same against the reference `age` tool."""

from __future__ import annotations

import base64
import os

import pyrage
import pytest

from dr.repository import agefile

CHUNK = agefile.CHUNK
ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, 3 * CHUNK + 17]


@pytest.fixture(scope="module")
def keys():
    identity = pyrage.x25519.Identity.generate()
    return identity, identity.to_public()


def _encrypt(data: bytes, *recipients) -> bytes:
    return agefile.encrypt(data, [agefile.recipient_key(str(r)) for r in recipients])


@pytest.mark.parametrize("size", SIZES)
def test_pyrage_reads_what_dr_writes(keys, size):
    identity, recipient = keys
    data = os.urandom(size)
    blob = _encrypt(data, recipient)
    assert blob.startswith(b"age-encryption.org/v1\n-> X25519 ")
    assert pyrage.decrypt(blob, [identity]) == data


@pytest.mark.parametrize("size", SIZES)
def test_dr_reads_what_pyrage_writes(keys, size):
    identity, recipient = keys
    data = os.urandom(size)
    assert agefile.decrypt(pyrage.encrypt(data, [recipient]), [str(identity)]) == data


def test_every_recipient_can_read_and_no_one_else(keys):
    identity, recipient = keys
    other = pyrage.x25519.Identity.generate()
    stranger = pyrage.x25519.Identity.generate()
    blob = _encrypt(b"unseal key", recipient, other.to_public())
    assert agefile.decrypt(blob, [str(identity)]) == b"unseal key"
    assert agefile.decrypt(blob, [str(stranger), str(other)]) == b"unseal key"
    with pytest.raises(agefile.NotARecipient):
        agefile.decrypt(blob, [str(stranger)])


def test_each_file_has_its_own_key_and_nonce(keys):
    _, recipient = keys
    assert _encrypt(b"same", recipient) != _encrypt(b"same", recipient)


def test_an_identity_and_its_recipient_decode_to_the_same_public_key(keys):
    identity, recipient = keys
    assert agefile.identity_key(str(identity))[1] == agefile.recipient_key(str(recipient))


def test_a_key_with_a_bad_checksum_or_prefix_is_refused(keys):
    _, recipient = keys
    text = str(recipient)
    flipped = text[:-1] + ("q" if text[-1] != "q" else "p")
    with pytest.raises(agefile.AgeError, match="checksum"):
        agefile.recipient_key(flipped)
    with pytest.raises(agefile.AgeError, match="prefix"):
        agefile.recipient_key("agf" + text[3:])


def _damaged(blob: bytes, at: int) -> bytes:
    return blob[:at] + bytes([blob[at] ^ 0x01]) + blob[at + 1:]


def test_damage_anywhere_is_refused(keys):
    identity, recipient = keys
    blob = _encrypt(os.urandom(2 * CHUNK + 5), recipient)
    payload_at = blob.index(b"\n--- ") + 5 + 43 + 1
    for at, match in [(len(blob) - 1, "payload damaged"), (payload_at + CHUNK, "payload damaged"),
                      (payload_at, "payload damaged"),  # the nonce
                      (blob.index(b"\n--- ") + 7, "MAC|Base64")]:
        with pytest.raises(agefile.AgeError, match=match):
            agefile.decrypt(_damaged(blob, at), [str(identity)])
    at = blob.index(b"\n", len("age-encryption.org/v1\n")) + 3  # inside the wrapped file key
    other = b"A" if blob[at:at + 1] != b"A" else b"B"  # still Base64: the unwrap itself must fail
    with pytest.raises(agefile.NotARecipient):
        agefile.decrypt(blob[:at] + other + blob[at + 1:], [str(identity)])


def test_truncation_and_extension_are_refused(keys):
    identity, recipient = keys
    blob = _encrypt(os.urandom(2 * CHUNK), recipient)
    payload_at = blob.index(b"\n--- ") + 5 + 43 + 1 + 16
    at_boundary = payload_at + CHUNK + agefile.TAG  # a whole first chunk, the last one cut off
    for cut in (blob[:at_boundary], blob[:-1], blob[:payload_at], blob + b"\0"):
        with pytest.raises(agefile.AgeError):
            agefile.decrypt(cut, [str(identity)])


def test_malformed_headers_are_refused(keys):
    identity, recipient = keys
    blob = _encrypt(b"x", recipient)
    header_end = blob.index(b"\n--- ")
    for bad, match in [(b"age-encryption.org/v2\n" + blob[22:], "not an age v1"),
                       (blob[:22] + b"garbage\n" + blob[22:], "not a stanza"),
                       (blob[:header_end] + b"\n--- " + b"!" * 43 + blob[header_end + 48:], "not Base64"),
                       (blob[:22] + b"-> X25519 " + b"A" * 5000 + b"\n", "too long")]:
        with pytest.raises(agefile.AgeError, match=match):
            agefile.decrypt(bad, [str(identity)])


def test_a_non_canonical_base64_share_is_refused(keys):
    # 32 bytes are 43 Base64 characters, the last with two unused bits: setting them decodes to
    # the same bytes, and age readers must refuse such a header (it would change the MAC'd bytes)
    identity, recipient = keys
    blob = _encrypt(b"x", recipient)
    start, end = 22 + len(b"-> X25519 "), blob.index(b"\n", 22)
    share = blob[start:end]
    index = ALPHABET.index(share[-1:])
    non_canonical = share[:-1] + ALPHABET[index | 0x03:(index | 0x03) + 1]
    assert base64.b64decode(non_canonical + b"=") == base64.b64decode(share + b"=")
    with pytest.raises(agefile.AgeError, match="non-canonical"):
        agefile.decrypt(blob[:start] + non_canonical + blob[end:], [str(identity)])


@pytest.mark.parametrize("size", [0, CHUNK, 3 * CHUNK + 17])
def test_without_decrypt_into_the_same_files_are_read_and_refused(keys, monkeypatch, size):
    # an older cryptography (pyproject allows some) has no decrypt_into: the chunks are joined
    monkeypatch.setattr(agefile, "IN_PLACE", False)
    identity, recipient = keys
    data = os.urandom(size)
    blob = _encrypt(data, recipient)
    assert agefile.decrypt(blob, [str(identity)]) == data
    assert agefile.decrypt(pyrage.encrypt(data, [recipient]), [str(identity)]) == data
    for damaged in (blob[:-1], blob + b"\0", _damaged(blob, len(blob) - 1)):
        with pytest.raises(agefile.AgeError):
            agefile.decrypt(damaged, [str(identity)])
