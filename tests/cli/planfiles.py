"""Writing small real plans for CLI tests."""

from __future__ import annotations

import os

from dr.repository.encryption import generate_identity

HEADER = """version: 1
name: test
failure_domains:
  - name: cloud
    kind: provider
    children:
      - {{name: region-a, kind: region, children: [{{name: cluster-a, kind: cluster}}]}}
      - {{name: region-b, kind: region}}
protects_against: [cluster-a]
encryption:
  recipients: [{recipients}]
targets:
  - {target}
sources:
"""


def write_plan(path, target: str, sources: str, recipients: list[str] = ()) -> str:
    text = HEADER.format(target=target, recipients=", ".join(f'"{r}"' for r in recipients)) + sources
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return str(path)


def local_target(root) -> str:
    return f'{{name: dr-site, url: "{root}", domain: region-b}}'


def s3_target(bucket: str, endpoint: str, region: str = "eu-west-1", lock: str = "", days: int = 1) -> str:
    """`lock`: a mode (governance, compliance) for `immutability: {mode, days}`."""
    immutability = f", immutability: {{mode: {lock}, days: {days}}}" if lock else ""
    return (f'{{name: dr-site, url: "s3://{bucket}/repo", domain: region-b, endpoint_url: "{endpoint}", '
            f'region: {region}{immutability}}}')


def files_source(name: str, paths: list, secret: bool = False) -> str:
    sensitivity = "\n    sensitivity: secret" if secret else ""
    listed = ", ".join(f'"{p}"' for p in paths)
    return f"  - name: {name}\n    type: files{sensitivity}\n    paths: [{listed}]\n"


def key_pair(tmp_path) -> tuple[str, str]:
    """(identity file path, recipient)."""
    identity, recipient = generate_identity()
    path = os.path.join(str(tmp_path), "identity.txt")
    with open(path, "w") as handle:
        handle.write(identity + "\n")
    return path, recipient


def random_tree(root, files: int, sizes) -> str:
    """`root/data` holding `files` files of random bytes in 6 folders; sizes(i) is file i's size."""
    data = os.path.join(str(root), "data")
    for i in range(files):
        path = os.path.join(data, f"d{i % 6}", f"f{i}.bin")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(os.urandom(sizes(i)))
    return data


def blob_count(repo_root) -> int:
    """Blobs stored so far in a local repository."""
    blobs = os.path.join(str(repo_root), "blobs")
    return sum(len(names) for _, _, names in os.walk(blobs)) if os.path.isdir(blobs) else 0


def tree_bytes(root) -> dict[str, bytes]:
    """Every file below `root`, by its path relative to it: to compare a restored tree."""
    out = {}
    for folder, _, names in os.walk(str(root)):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, str(root))] = handle.read()
    return out
