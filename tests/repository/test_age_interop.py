"""dr's encrypted blobs are plain age files: the reference `age` tool (Debian) reads them, and dr
reads what `age` writes. A repository's secrets stay recoverable without dr."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from dr.repository import encryption


@pytest.fixture
def age_tool():
    path = shutil.which("age")
    assert path, "the Debian package 'age' is missing: scripts/install-test-deps installs it"
    return path


def test_the_reference_tool_decrypts_what_dr_encrypts(tmp_path, age_tool):
    identity, recipient = encryption.generate_identity()
    (tmp_path / "key.txt").write_text(identity + "\n")
    blob = encryption.encrypt(b"vault unseal key share 3", encryption.parse_recipients([recipient]))
    (tmp_path / "blob").write_bytes(blob)
    out = subprocess.run([age_tool, "-d", "-i", str(tmp_path / "key.txt"), str(tmp_path / "blob")],
                         capture_output=True, check=True)
    assert out.stdout == b"vault unseal key share 3"


def test_dr_decrypts_what_the_reference_tool_encrypts(tmp_path, age_tool):
    identity, recipient = encryption.generate_identity()
    (tmp_path / "key.txt").write_text(identity + "\n")
    out = subprocess.run([age_tool, "-r", recipient], input=b"sealed-secrets key", capture_output=True, check=True)
    identities = encryption.load_identities(str(tmp_path / "key.txt"))
    assert encryption.decrypt(out.stdout, identities) == b"sealed-secrets key"
