"""age v1 files with X25519 recipients (https://age-encryption.org/v1), on `cryptography`.

Why not pyrage for the bytes: its ChaCha20-Poly1305 ran at 120-450 MiB/s on this project's
machines and holds the GIL for the whole call; OpenSSL's, through `cryptography`, at ~3 GiB/s.
A secret volume's backup and restore spent most of a core in pyrage (docs/benchmarks.md,
issue 26). The files written here are plain age files: the reference `age` tool and pyrage
read them, and this module reads theirs (tests/repository/test_agefile.py checks both ways,
and the damage each check must refuse). pyrage still parses and generates keys.

Only what dr writes is read here: binary (not armored) files with X25519 stanzas. Stanzas of
other types are skipped, as the spec allows; a file with no stanza for one of the identities
is refused.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import os
from typing import Iterator

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

VERSION_LINE = b"age-encryption.org/v1"
X25519_LABEL = b"age-encryption.org/v1/X25519"
CHUNK = 64 * 1024  # the STREAM's plaintext chunk, fixed by the format
TAG = 16
COLUMNS = 64  # a stanza body's line width
MAX_STANZAS = 1024  # a hostile header costs bounded work
IN_PLACE = hasattr(ChaCha20Poly1305, "decrypt_into")  # not in every cryptography pyproject allows


class AgeError(Exception):
    """The file is not a well-formed age file, was changed, or is for other identities."""


class NotARecipient(AgeError):
    pass


# -- keys ---------------------------------------------------------------------------------
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
BECH32_GENERATORS = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def _polymod(values: list[int]) -> int:
    check = 1
    for value in values:
        top = check >> 25
        check = (check & 0x1FFFFFF) << 5 ^ value
        for i, generator in enumerate(BECH32_GENERATORS):
            if (top >> i) & 1:
                check ^= generator
    return check


def _bech32_key(text: str, hrp: str) -> bytes:
    """The 32 bytes of an age key in Bech32 (age has no 90-character limit)."""
    lower = text.lower()
    if text not in (lower, text.upper()) or not lower.startswith(hrp + "1"):
        raise AgeError(f"not an age key with prefix {hrp}1")
    try:
        values = [BECH32.index(c) for c in lower[len(hrp) + 1:]]
    except ValueError:
        raise AgeError("not a Bech32 string") from None
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    if len(values) < 6 or _polymod(expanded + values) != 1:
        raise AgeError("Bech32 checksum does not match")
    bits, acc, out = 0, 0, bytearray()
    for value in values[:-6]:
        acc, bits = (acc << 5) | value, bits + 5
        if bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
    if len(out) != 32 or bits >= 5 or acc & ((1 << bits) - 1):
        raise AgeError("an age key is 32 bytes")
    return bytes(out)


@functools.lru_cache(maxsize=256)
def recipient_key(text: str) -> bytes:
    """`age1...` to the X25519 public key's 32 bytes."""
    return _bech32_key(text, "age")


@functools.lru_cache(maxsize=64)
def identity_key(text: str) -> tuple[X25519PrivateKey, bytes]:
    """`AGE-SECRET-KEY-1...` to (the private key, its public key's bytes)."""
    private = X25519PrivateKey.from_private_bytes(_bech32_key(text, "age-secret-key-"))
    return private, private.public_key().public_bytes_raw()


# -- the pieces of the format ------------------------------------------------------------
def _hkdf(key: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=SHA256(), length=32, salt=salt, info=info).derive(key)


def _b64(data: bytes) -> bytes:
    return base64.b64encode(data).rstrip(b"=")


def _unb64(text: bytes) -> bytes:
    """Unpadded standard Base64, canonical only (the spec refuses other encodings)."""
    try:
        data = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except ValueError:
        raise AgeError("header: not Base64") from None
    if _b64(data) != text:
        raise AgeError("header: non-canonical Base64")
    return data


def _nonce(counter: int, last: bool) -> bytes:
    return counter.to_bytes(11, "big") + (b"\x01" if last else b"\x00")


def _header_mac(file_key: bytes, header: bytes) -> bytes:
    return hmac.new(_hkdf(file_key, b"", b"header"), header, hashlib.sha256).digest()


# -- encrypt ------------------------------------------------------------------------------
def encrypt(plaintext: bytes, recipients: list[bytes]) -> bytes:
    """One age file of `plaintext` to X25519 public keys (32 bytes each)."""
    file_key = os.urandom(16)
    lines = [VERSION_LINE]
    for public in recipients:
        ephemeral = X25519PrivateKey.generate()
        share = ephemeral.public_key().public_bytes_raw()
        shared = ephemeral.exchange(X25519PublicKey.from_public_bytes(public))
        wrap = ChaCha20Poly1305(_hkdf(shared, share + public, X25519_LABEL))
        lines += [b"-> X25519 " + _b64(share), _b64(wrap.encrypt(bytes(12), file_key, None))]
    lines.append(b"---")
    header = b"\n".join(lines)
    nonce = os.urandom(16)
    parts = [header, b" ", _b64(_header_mac(file_key, header)), b"\n", nonce]
    parts += _seal(ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload")), plaintext)
    return b"".join(parts)


def _seal(aead: ChaCha20Poly1305, plaintext: bytes) -> list[bytes]:
    view, size = memoryview(plaintext), len(plaintext)
    sealed, counter = [], 0
    for start in range(0, max(size, 1), CHUNK):
        last = start + CHUNK >= size
        sealed.append(aead.encrypt(_nonce(counter, last), view[start:start + CHUNK], None))
        counter += 1
    return sealed


# -- decrypt ------------------------------------------------------------------------------
def decrypt(data: bytes, identities: list[str]) -> bytearray:
    """The plaintext of an age file, for identities given as `AGE-SECRET-KEY-1...` strings
    (a bytearray: the buffer it was decrypted into, not copied again)."""
    header, stanzas, mac, payload_at = _parse_header(data)
    file_key = _unwrap(stanzas, [identity_key(text) for text in identities])
    if not hmac.compare_digest(_header_mac(file_key, header), mac):
        raise AgeError("header damaged: its MAC does not match")
    nonce = data[payload_at:payload_at + 16]
    if len(nonce) != 16:
        raise AgeError("truncated: no payload")
    aead = ChaCha20Poly1305(_hkdf(file_key, nonce, b"payload"))
    return _open(aead, memoryview(data)[payload_at + 16:])


def _parse_header(data: bytes) -> tuple[bytes, list[tuple[list[bytes], bytes]], bytes, int]:
    """(the bytes the MAC covers, the stanzas, the MAC, where the payload starts)."""
    if not data.startswith(VERSION_LINE + b"\n"):
        raise AgeError("not an age v1 file")
    at, stanzas = len(VERSION_LINE) + 1, []
    while True:
        line, after = _line(data, at)
        if line.startswith(b"--- "):
            mac = _unb64(line[4:])
            if len(mac) != 32:
                raise AgeError("header: the MAC is not 32 bytes")
            return data[:at + 3], stanzas, mac, after
        if not line.startswith(b"-> ") or len(stanzas) >= MAX_STANZAS:
            raise AgeError("header: not a stanza")
        args = line[3:].split(b" ")
        body, at = _body(data, after)
        stanzas.append((args, body))


def _line(data: bytes, at: int) -> tuple[bytes, int]:
    end = data.find(b"\n", at, at + 4096)
    if end < 0:
        raise AgeError("header: truncated or a line too long")
    return data[at:end], end + 1


def _body(data: bytes, at: int) -> tuple[bytes, int]:
    pieces = []
    while True:
        line, at = _line(data, at)
        if len(line) > COLUMNS:
            raise AgeError("header: a stanza body line is too long")
        pieces.append(_unb64(line))
        if len(line) < COLUMNS:
            return b"".join(pieces), at


def _unwrap(stanzas: list[tuple[list[bytes], bytes]],
            identities: list[tuple[X25519PrivateKey, bytes]]) -> bytes:
    for args, body in stanzas:
        if args[0] != b"X25519":
            continue
        if len(args) != 2 or len(body) != 32:
            raise AgeError("header: malformed X25519 stanza")
        share = _unb64(args[1])
        if len(share) != 32:
            raise AgeError("header: malformed X25519 stanza")
        for private, public in identities:
            try:
                shared = private.exchange(X25519PublicKey.from_public_bytes(share))
                wrap = ChaCha20Poly1305(_hkdf(shared, share + public, X25519_LABEL))
                return wrap.decrypt(bytes(12), body, None)
            except (InvalidTag, ValueError):  # ValueError: an all-zero shared secret
                continue
    raise NotARecipient("none of the given identities is a recipient")


def _open(aead: ChaCha20Poly1305, sealed: memoryview) -> bytearray:
    """The payload's plaintext, decrypted in place into one buffer: a bytes object per 64 KiB
    chunk, joined, made the decryption 3-5x slower than the cipher (fresh pages for each)."""
    size, step = len(sealed), CHUNK + TAG
    if size < TAG:
        raise AgeError("truncated: no payload")
    chunks = -(-size // step)
    if size - (chunks - 1) * step < TAG:  # a last piece too short to hold a tag
        raise AgeError(f"payload damaged or truncated at chunk {chunks - 1}")
    if not IN_PLACE:
        return bytearray(b"".join(_open_each(aead, sealed, step)))
    plaintext = bytearray(size - TAG * chunks)
    out, at = memoryview(plaintext), 0
    for counter, start in enumerate(range(0, size, step)):
        last, piece = start + step >= size, sealed[start:start + step]
        if last and len(piece) == TAG and counter:
            raise AgeError("payload: an empty last chunk")
        try:
            aead.decrypt_into(_nonce(counter, last), piece, None, out[at:at + len(piece) - TAG])
        except InvalidTag:
            raise AgeError(f"payload damaged or truncated at chunk {counter}") from None
        at += len(piece) - TAG
    return plaintext


def _open_each(aead: ChaCha20Poly1305, sealed: memoryview, step: int) -> Iterator[bytes]:
    """The chunks decrypted one by one: for a `cryptography` too old to have decrypt_into."""
    size = len(sealed)
    for counter, start in enumerate(range(0, size, step)):
        last, piece = start + step >= size, sealed[start:start + step]
        if last and len(piece) == TAG and counter:
            raise AgeError("payload: an empty last chunk")
        try:
            yield aead.decrypt(_nonce(counter, last), piece, None)
        except InvalidTag:
            raise AgeError(f"payload damaged or truncated at chunk {counter}") from None
