"""dr's encrypted blobs are plain age files: the reference `age` tool (Debian) reads them, and dr
reads what `age` writes. A repository's secrets stay recoverable without dr."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dr.repository import encryption


@pytest.fixture
def age_tool():
    path = shutil.which("age")
    assert path, "the Debian package 'age' is missing: scripts/install-test-deps installs it"
    return path


# a short secret, a payload of exactly one STREAM chunk, and one of several with a short last chunk
@pytest.mark.parametrize("plaintext", [b"vault unseal key share 3", b"k" * 65536, os.urandom(3 * 65536 + 17)])
def test_the_reference_tool_decrypts_what_dr_encrypts(tmp_path, age_tool, plaintext):
    identity, recipient = encryption.generate_identity()
    (tmp_path / "key.txt").write_text(identity + "\n")
    blob = encryption.encrypt(plaintext, encryption.parse_recipients([recipient]))
    (tmp_path / "blob").write_bytes(blob)
    out = subprocess.run([age_tool, "-d", "-i", str(tmp_path / "key.txt"), str(tmp_path / "blob")],
                         capture_output=True, check=True)
    assert out.stdout == plaintext


def test_dr_decrypts_what_the_reference_tool_encrypts(tmp_path, age_tool):
    identity, recipient = encryption.generate_identity()
    (tmp_path / "key.txt").write_text(identity + "\n")
    for plaintext in (b"sealed-secrets key", os.urandom(2 * 65536)):
        out = subprocess.run([age_tool, "-r", recipient], input=plaintext, capture_output=True, check=True)
        identities = encryption.load_identities(str(tmp_path / "key.txt"))
        assert encryption.decrypt(out.stdout, identities) == plaintext
