"""Finding training checkpoints and deciding whether each one is complete, without torch.

Where this sits: the `checkpoints` exporter (written separately) uses this package to decide
WHAT to back up. A trainer writes checkpoints while the backup runs, so a directory that
merely exists is not a checkpoint yet: copying one whose writer is still busy, or died
half-way, gives a backup that cannot be loaded at restore time. The exporter calls
`discover`, then `assess_settled` on each candidate, copies `Verdict.files` of the complete
ones, and records the reasons for the rest.

- tree.py          the two-method file-tree protocol (list files with size and mtime; read a
                   byte range) and its local implementation; an S3 one is list + ranged GET.
- discovery.py     `discover(root)`: candidate checkpoints under a root, by format.
- completeness.py  `assess` / `assess_settled`: a Verdict with one reason per failed rule.
- dcp_metadata.py  what a DCP `.metadata` (or a safetensors index) requires of its files.
- dcp_pickle.py    the restricted unpickler behind it: only inert stand-ins, never code.
- single_file.py   torch.save zip and safetensors structure checks, from headers alone.

The product never imports torch: backup hosts should not need a multi-GB wheel, and an
untrusted pickle must never reach a loader that can execute code. Tests do use torch, to
make real checkpoints and to compare our reading of them with torch's own.
"""
