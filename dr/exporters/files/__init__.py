"""The `files` exporter: local directories and files (configuration, small artifacts).

Export walks each configured path without following symlinks. Every regular file, directory
and symlink becomes one artifact, so a restore recreates the tree exactly: empty directories,
modes and nanosecond mtimes included. Identities are `<label>/<relative path>`, the label being
the basename of the configured path: stable when the restoring machine mounts things
elsewhere, and unique because Options rejects two paths with the same basename.

Unchanged files are not read again: the change token is size, mtime, inode and mode (as in
restic); when it equals the previous snapshot's, the sink reuses the stored content.

Restore strips setuid, setgid and sticky bits unless asked to keep them (--keep-special-bits):
a catalog is data anyone with write access to the store could forge, and a restored setuid
root binary is a privilege escalation. Each item whose bits were stripped says so.

SOPS-encrypted files (dr.exporters.files.sops): a small YAML, JSON, ENV or INI file whose `sops` metadata
names master keys gets one `sops-key` dependency per key (KMS, age, Vault transit ...), and
restore_needs makes them one any-of need (any key opens the file), so the audit judges where
the keys that decrypt it live. Such a file is read once more, for its metadata (sops_scan).

Restore never writes outside the destination: identities that are absolute or contain '..'
are refused, every parent directory is opened relative to the previous one with O_NOFOLLOW (a
symlink in the destination is never written through), and files are written to a staging
name in their final directory, renamed over the old names only when every item of the restore
was written: nothing is ever half-written, and a failed restore writes nothing (restoring.py).

Modules: exporter (the plugin: options, the walk, export, SOPS dependencies) and restoring (the
restore into a destination directory, imported only when a restore runs).
"""

from dr.exporters.files.exporter import KINDS, FilesExporter, label_of

__all__ = ["FilesExporter", "KINDS", "label_of"]
