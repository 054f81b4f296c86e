"""Two test exporters that fail on purpose, for how a failed source is reported (issue 16, item 6).

`flaky` fails the way the world fails: its store answers 503 SlowDown (an expected condition:
one line, never a traceback). `buggy` fails the way code fails: a TypeError (one line saying it
is unexpected; its traceback only with DR_DEBUG=1).
"""

from __future__ import annotations

from typing import Iterator

from dr.contract import ArtifactSink, Discovered, Exporter, ExporterOptions
from dr.repository.stores.base import TransientStoreError


class _Failing(Exporter):
    contract_version = 2

    class Options(ExporterOptions):
        pass

    def discover(self) -> Iterator[Discovered]:
        yield Discovered("thing", "one")

    def restore(self, artifacts, reader, request):
        return iter(())


class FlakyExporter(_Failing):
    type_name = "flaky"
    summary = "fails with a store that answers 503 SlowDown"

    def export(self, sink: ArtifactSink) -> None:
        sink.write("thing", "one", b"1" * (3 << 20))  # read and stored, then lost with the source
        raise TransientStoreError("put s3://bucket/repo/blobs/ab/abcdef: 503 SlowDown (after 5 attempts)")


class BuggyExporter(_Failing):
    type_name = "buggy"
    summary = "fails with a programming error"

    def export(self, sink: ArtifactSink) -> None:
        sink.write("thing", "one", None + 1)  # type: ignore[operator]
