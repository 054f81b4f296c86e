"""The backup repository (docs/format.md): stores, blobs, catalogs, snapshots, locks, encryption."""
