"""Places of checkpoints: the kit's place contract (dr/kits/places/) opened from a plan.

- opening.py      open_place: a plan's location as a (retrying) kit place.
"""
