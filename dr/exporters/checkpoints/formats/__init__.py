"""Checkpoint formats, read without torch: what a checkpoint is and whether one is complete.

- tree.py          the two-method file-tree protocol (list files with size and mtime; read a
                   byte range) and its local implementation; places implement it too.
- discovery.py     `discover(root)`: candidate checkpoints under a root, by format.
- completeness.py  `assess` / `assess_settled`: a Completeness with one reason per failed rule.
- dcp_metadata.py  what a DCP `.metadata` (or a safetensors index) requires of its files.
- dcp_pickle.py    the restricted unpickler behind it: only inert stand-ins, never code.
- single_file.py   torch.save zip and safetensors structure checks, from headers alone.
"""
