"""DR copies of checkpoints: their layout, how one is made, checked, selected and inventoried.

- layout.py     the copy's layout: files, dr-manifest.json, DR-COMPLETE, dr-journal/.
- copying.py    one checkpoint's copy, resumable after a kill.
- verifying.py  a copy's files against the digests of its manifest.
- tiers.py      which checkpoints each DR target holds (latest, milestones) and which to prune.
- inventory.py  what a target holds: complete copies, unfinished ones, leftovers.
"""
