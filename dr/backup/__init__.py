"""The backup job: run each source's exporter into a new snapshot on each of its targets."""

from dr.backup.running import BackupResult, run_backup

__all__ = ["BackupResult", "run_backup"]
