"""The restore job: read a snapshot's artifacts for a source and hand them to its exporter."""

from dr.restore.running import RestoreResult, run_restore

__all__ = ["RestoreResult", "run_restore"]
