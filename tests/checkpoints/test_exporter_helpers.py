"""Helpers for the `checkpoints` exporter tests (this module holds no tests of its own).

- real backups through a real repository (the sink and reader dr itself uses);
- real DCP checkpoints uploaded to a moto bucket the way a trainer's fsspec writer leaves them;
- loading a checkpoint with torch.distributed.checkpoint and comparing every tensor;
- a minimal read-only fsspec filesystem over boto3 for `s3://`, so DCP's own FsspecReader can
  load a DR copy in place from the bucket. (s3fs itself cannot go into this venv: it pins
  botocore<1.43.118 while boto3 1.44 needs botocore>=1.44.8; pip would break boto3.)
"""

from __future__ import annotations

import copy
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import torch
import torch.distributed.checkpoint as dcp
from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from dr.exporters.checkpoints import CheckpointsExporter
from dr.contract import ExportContext, RestoreRequest
from dr.model.artifacts import Artifact
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from dr.repository.writing import SnapshotWriter
from tests.checkpoints.writers import Trainer, save_dcp
from tests.fixtures_s3 import s3_client

SOURCE = "ckpts"


def make_exporter(options: dict, base_dir: str = "/nonexistent", clock=None) -> CheckpointsExporter:
    """An exporter whose settle window does not really sleep (tests pass settle_seconds=0 or
    check the window with their own sleep)."""
    context = ExportContext(SOURCE, CheckpointsExporter.Options(**options), base_dir)
    x = CheckpointsExporter(context)
    x.sleep = lambda seconds: None
    if clock is not None:
        x.clock = clock
    return x


@dataclass
class Backup:
    artifacts: list[Artifact]
    findings: list[dict]
    log: list[str] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def codes(self) -> list[str]:
        return [f["code"] for f in self.findings]

    def by_identity(self) -> dict[str, Artifact]:
        return {a.identity: a for a in self.artifacts}


class Repo:
    """A real repository; each backup's parent is the previous one (change-token reuse)."""

    def __init__(self, root: Path) -> None:
        self.repo = Repository(LocalStore(str(root)))
        self.repo.init()
        self.parent: list[Artifact] = []

    def backup(self, x: CheckpointsExporter) -> Backup:
        log: list[str] = []
        x.context.log = log.append
        writer = SnapshotWriter(self.repo, [])
        try:
            sink = writer.source(SOURCE, "checkpoints", self.parent)
            x.export(sink)
            result = sink.commit()
            result.findings = x.context.findings
            snapshot = writer.finish("plan", [result])
        finally:
            writer.close()
        self.parent = list(read_catalog(self.repo, snapshot.catalog))
        return Backup(self.parent, x.context.findings, log, dict(writer.stats))

    def restore(self, x: CheckpointsExporter, artifacts: list[Artifact], **request: Any):
        return list(x.restore(artifacts, ArtifactReader(self.repo, None), RestoreRequest(**request)))


class NullSink:
    """A sink that keeps records in memory (for runs where no repository is needed)."""

    source = SOURCE

    def __init__(self) -> None:
        self.written: list[tuple[str, str]] = []
        self.bytes_transferred = 0

    def write(self, kind: str, identity: str, content, **kwargs):
        self.written.append((kind, identity))

    def transferred(self, nbytes: int) -> None:
        self.bytes_transferred += nbytes


# -- checkpoints ------------------------------------------------------------------------------
def save_steps(root: Path, run: str, steps: list[int], trainer: Trainer | None = None,
               **writer_kwargs: Any) -> dict[int, dict]:
    """Real DCP saves at root/run/step-N between training steps; returns deep copies of the
    saved states, to compare loads against."""
    trainer = trainer or Trainer()
    saved = {}
    for step in steps:
        trainer.step(2)
        state = trainer.state()
        save_dcp(root / run / f"step-{step}", state, **writer_kwargs)
        saved[step] = copy.deepcopy(state)
    return saved


def upload_tree(endpoint: str, bucket: str, prefix: str, local: Path) -> list[str]:
    """Upload a local tree as a trainer's S3 writer would leave it (index files last)."""
    files = sorted((p for p in local.rglob("*") if p.is_file()),
                   key=lambda p: (p.name.endswith("metadata"), str(p)))
    keys = []
    for path in files:
        key = f"{prefix}/{path.relative_to(local).as_posix()}"
        s3_client(endpoint).upload_file(str(path), bucket, key)
        keys.append(key)
    return keys


def load_state(reader: Any) -> dict:
    """Load a checkpoint into a freshly built model and optimizer (their state must exist
    before dcp.load, so the fresh trainer takes one step first)."""
    target = Trainer(seed=12345)
    target.step(1)
    state = target.state()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dcp.load(state, storage_reader=reader)
    return state


def assert_same_state(got: Any, want: Any, where: str = "") -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and torch.equal(got, want), where
    elif isinstance(want, dict):
        assert set(got) == set(want), where
        for key in want:
            assert_same_state(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_state(g, w, f"{where}[{i}]")
    else:
        assert got == want, where


def files_of(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def bucket_files(endpoint: str, bucket: str, prefix: str) -> dict[str, bytes]:
    client = s3_client(endpoint)
    out = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for item in page.get("Contents", []):
            out[item["Key"][len(prefix) + 1:]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    return out


# -- loading in place from a bucket -----------------------------------------------------------
class BotoS3FileSystem(AbstractFileSystem):
    """Read-only `s3://bucket/key` for fsspec: HeadObject, ListObjectsV2, ranged GetObject."""

    protocol = ("s3", "s3a")
    cachable = False

    def __init__(self, endpoint_url: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.client = s3_client(endpoint_url)

    @classmethod
    def _strip_protocol(cls, path: str) -> str:
        path = str(path)
        for p in ("s3://", "s3a://"):
            path = path.removeprefix(p)
        return path.rstrip("/")

    @staticmethod
    def _split(path: str) -> tuple[str, str]:
        bucket, _, key = path.partition("/")
        return bucket, key

    def info(self, path: str, **kwargs: Any) -> dict:
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        try:
            head = self.client.head_object(Bucket=bucket, Key=key)
            return {"name": path, "size": head["ContentLength"], "type": "file"}
        except self.client.exceptions.ClientError:
            pass
        listed = self.client.list_objects_v2(Bucket=bucket, Prefix=key + "/", MaxKeys=1)
        if listed.get("KeyCount"):
            return {"name": path, "size": 0, "type": "directory"}
        raise FileNotFoundError(path)

    def ls(self, path: str, detail: bool = True, **kwargs: Any):
        path = self._strip_protocol(path)
        bucket, key = self._split(path)
        out = []
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key + "/",
                                                                      Delimiter="/")
        for page in pages:
            out += [{"name": f"{bucket}/{o['Key']}", "size": o["Size"], "type": "file"}
                    for o in page.get("Contents", [])]
            out += [{"name": f"{bucket}/{p['Prefix'].rstrip('/')}", "size": 0, "type": "directory"}
                    for p in page.get("CommonPrefixes", [])]
        return out if detail else [o["name"] for o in out]

    def _open(self, path: str, mode: str = "rb", block_size: int | None = None, **kwargs: Any):
        if mode != "rb":
            raise PermissionError("read-only filesystem")
        return _RangedFile(self, self._strip_protocol(path), mode, block_size=block_size or 4 << 20)


class _RangedFile(AbstractBufferedFile):
    def _fetch_range(self, start: int, end: int) -> bytes:
        bucket, key = self.fs._split(self.path)
        if end <= start:
            return b""
        return self.fs.client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}")["Body"].read()


@contextmanager
def s3_fsspec():
    """Serve `s3://` through BotoS3FileSystem while the block runs."""
    from fsspec.registry import _registry, known_implementations

    saved = (_registry.get("s3"), known_implementations.get("s3"))
    fsspec.register_implementation("s3", BotoS3FileSystem, clobber=True)
    try:
        yield
    finally:
        _registry.pop("s3", None)
        if saved[0] is not None:
            _registry["s3"] = saved[0]


def env_for_child() -> dict:
    """The test's fake AWS environment, for a subprocess."""
    keep = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED", "PATH", "HOME")
    return {k: os.environ[k] for k in keep if k in os.environ} | {"PYTHONPATH": str(Path(__file__).parents[2])}
