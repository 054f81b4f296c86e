"""The demo: `dr demo`'s walkthrough of the whole job on local stand-ins (a layer beside drills).

Where it sits: under the CLI, which only parses `dr demo`'s options and prints; beside the
drills, and like them it drives the real commands (here through dr's own entry point, passed
in). It is the one place outside the exporters that builds a plan of built-in sources by name:
it shows the built-ins, it is not the core that serves any exporter.

walkthrough  run_demo(): the steps, the comparisons of what came back, the audit
stand_ins    the platform, the DR site and the plan, as local files
checkpoints  real PyTorch DCP checkpoints of a tiny model (torch: the `demo` extra)
mlflow       a small model registry in a stand-in MLflow server (over its REST API)
vault        an OpenBao raft snapshot backed up, restored into a fresh server, unsealed, read back
narrating    what the demo says, through the CLI's Output (which it may not import)
"""
