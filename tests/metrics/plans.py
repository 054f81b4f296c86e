"""Small real plans for the metrics tests: files sources on a local target, each plan named
for its test so that the shared Pushgateway and Prometheus keep the tests apart."""

from __future__ import annotations

import os

from tests.cli.planfiles import local_target, write_plan


def data_folder(root, name: str, files: int = 3) -> str:
    folder = os.path.join(str(root), name)
    os.makedirs(folder)
    for i in range(files):
        with open(os.path.join(folder, f"f{i}.yaml"), "w", encoding="utf-8") as handle:
            handle.write(f"{name}: {i}\n" * (40 * (i + 1)))
    return folder


def files_plan(root, plan_name: str, folders: dict[str, str], schedule: str = "0 * * * *",
               rpo: str = "2h", rto: str = "30m", target: str | None = None) -> str:
    """A plan `plan_name` with one files source per folder, each on `schedule` with objectives;
    `target` (tests.cli.planfiles' target text) defaults to a local repository in `root`."""
    sources = "".join(f"  - name: {name}\n    type: files\n    schedule: \"{schedule}\"\n    rpo: {rpo}\n"
                      f"    rto: {rto}\n    paths: [\"{path}\"]\n" for name, path in folders.items())
    target = target or local_target(os.path.join(str(root), "repo"))
    path = write_plan(os.path.join(str(root), "plan.yaml"), target, sources)
    with open(path, encoding="utf-8") as handle:
        text = handle.read().replace("name: test\n", f"name: {plan_name}\n", 1)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
