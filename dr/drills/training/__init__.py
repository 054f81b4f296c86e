"""Training recovery drills: resume a run from its DR copy and measure the RTO of training.

resuming  `dr drill --training RUN`: choose the newest save whose copy survives the scenario,
          restore it into a scratch folder, run the plan's resume command, judge, record
running   the resumed process: started, watched through its progress file, stopped
events    reading the progress protocol's JSON lines (dr.training.progress writes them)
judging   the phases (measured or not, and why) and the continuity checks

Where it sits: dr.drills, above dr.restore (the checkpoint is restored like any source) and the
contract (the save and its copies come from the exporter's `checkpoint_saves`).
"""

from dr.drills.training.resuming import TrainingDrillError, run_training_drill

__all__ = ["TrainingDrillError", "run_training_drill"]
