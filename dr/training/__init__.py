"""What a training process uses to tell `dr drill --training` how its resume went.

progress  the progress protocol's writer: JSON lines appended to $DR_PROGRESS_FILE
          (docs/readiness.md, "Training recovery drills"). It imports nothing but the
          standard library, so a trainer's image needs nothing of dr's dependencies.

Where it sits: the bottom of dr's layers, beside dr.kits; it imports nothing of dr, and the
drill that reads what it writes is dr.drills.training.
"""
