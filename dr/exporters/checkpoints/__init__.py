"""The `checkpoints` exporter: one package, its class in exporter.py like every other's, by concern.

Where this sits: the exporter copies training checkpoints, complete and verified, to DR
targets. A trainer writes checkpoints while the backup runs, so a directory that merely exists
is not a checkpoint yet: copying one whose writer is still busy, or died half-way, gives a
backup that cannot be loaded at restore time.

- formats/     what a checkpoint is and whether it is complete, read without torch
               (DCP, torch.save zip, safetensors); the file-tree protocol they read through.
- places/      where checkpoints and DR copies live: directories and S3, one contract.
- transfer/    moving bytes between places: parallel, bounded memory, hashed, server-side.
- copies/      the DR copy: its layout, making, verifying, tiers and inventory.
- options.py   the plan's options.             scanning.py   settled listing, run/step naming.
- exporting.py one backup run.                 restoring.py  choose, verify, write back.
- status.py    RPO per run, verify every copy.   exporter.py   the class, on the contract.

The product never imports torch: backup hosts should not need a multi-GB wheel, and an
untrusted pickle must never reach a loader that can execute code. Tests do use torch, to
make real checkpoints and to compare our reading of them with torch's own.
"""

from dr.exporters.checkpoints.exporter import CheckpointsExporter  # noqa: E402 (the entry point's name)

__all__ = ["CheckpointsExporter"]
