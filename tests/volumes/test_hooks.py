"""Pre and post hooks (issue 26, item 2): commands run in the pods that mount a claim, around its
snapshot, through the API server's exec.

The cluster is an emulated API server; tests/harness/volumes.py stands for a CSI driver,
tests/harness/jobs.py for the kubelet and the Job controller, and its `container_exec` for the
container runtime behind `pods/exec` (the workload's command runs as a local process with the
claim's directory at its mount path). The workload's Pod is an object marked Running: no
controller runs it.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
import yaml

from dr.cli.main import main
from dr.repository.catalogs import read_catalog
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.harness import EmulatedCluster, write_kubeconfig
from tests.harness.jobs import JobRunner, container_exec
from tests.harness.volumes import CsiStandIn, set_status
from tests.volumes.helpers import claim, findings, volumes_plan

MARK = "import sys; open(sys.argv[1], 'w').write(sys.argv[2])"


@pytest.fixture
def platform(tmp_path):
    with EmulatedCluster(name="source") as c:
        kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", {"source": c}))
        with CsiStandIn(c, tmp_path / "csi") as csi, \
                JobRunner(c, csi, tmp_path / "pods", programs={"python": sys.executable}):
            c.create_objects(claim("pg", "data"))
            folder = csi.directory_of("pg", "data")
            with open(os.path.join(folder, "base.bin"), "wb") as handle:
                handle.write(b"tables" * 1000)
            (pod,) = c.create_objects([{
                "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "postgres-0", "namespace": "pg",
                                                                "labels": {"app": "postgres"}},
                "spec": {"containers": [{"name": "postgres", "image": "postgres:16",
                                         "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}],
                         "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}}])
            set_status(c, pod, {"phase": "Running", "podIP": "10.0.0.9"})
            c.serve_pod_exec("pg", "postgres-0", container_exec({"/var/lib/postgresql": folder},
                                                                {"python": sys.executable}))
            yield {"cluster": c, "kubeconfig": kubeconfig, "folder": folder}


def _hook(pre=None, post=None, **more) -> dict:
    hook = {"name": "checkpoint", "pods": "app=postgres", "container": "postgres", **more}
    if pre:
        hook["pre"] = ["python", "-c", *pre] if isinstance(pre, list) else ["python", "-c", MARK,
                                                                             f"/var/lib/postgresql/{pre}", "pre"]
    if post:
        hook["post"] = ["python", "-c", MARK, f"/var/lib/postgresql/{post}", "post"]
    return hook


def _backed_up(tmp_path) -> set[str]:
    repo = Repository(LocalStore(str(tmp_path / "repo")))
    (snapshot,) = repo.snapshots()
    artifacts = read_catalog(repo, snapshot.catalog)
    packed = {"pg/data/" + item[0] for a in artifacts if a.kind == "volume-files" for item in a.meta["files"]}
    return packed | {a.identity for a in artifacts if a.kind == "volume-file"}


def test_pre_runs_before_the_snapshot_and_post_after_it(platform, tmp_path, capsys):
    plan = volumes_plan(tmp_path, platform["kubeconfig"], "source", namespaces=["pg"],
                        hooks=[_hook(pre="checkpointed", post="thawed")])
    assert main(["backup", "--plan", plan, "--json"]) == 0, capsys.readouterr()
    assert _backed_up(tmp_path) == {"pg/data/base.bin", "pg/data/checkpointed"}  # not `thawed`: after the snapshot
    assert os.path.exists(os.path.join(platform["folder"], "thawed"))
    requests = [r for r in platform["cluster"].emulator.log if r.subresource == "exec"]
    assert [(r.verb, r.name) for r in requests] == [("create", "postgres-0")] * 2


def test_a_failed_pre_fails_the_claim_by_name_and_post_still_runs(platform, tmp_path, capsys):
    fail = ["import sys; print('the database is not up', file=sys.stderr); sys.exit(3)"]
    plan = volumes_plan(tmp_path, platform["kubeconfig"], "source", namespaces=["pg"],
                        hooks=[_hook(pre=fail, post="thawed")])
    code = main(["backup", "--plan", plan, "--json"])
    out = capsys.readouterr().out
    (failed,) = [f for f in findings(json.loads(out)) if f["code"] == "volumes-copy-failed"]
    assert code != 0 and "checkpoint pre in pod postgres-0 (postgres): exit 3: the database is not up" \
        in failed["message"], out
    assert os.path.exists(os.path.join(platform["folder"], "thawed")), "post did not run after a failed pre"


def test_on_error_continue_copies_with_a_warning_and_a_hung_hook_times_out(platform, tmp_path, capsys):
    hang = ["import time; time.sleep(3)"]
    plan = volumes_plan(tmp_path, platform["kubeconfig"], "source", namespaces=["pg"],
                        hooks=[_hook(pre=hang, timeout_seconds=0.5, on_error="continue")])
    code = main(["backup", "--plan", plan, "--json"])
    out = capsys.readouterr().out
    (warned,) = [f for f in findings(json.loads(out)) if f["code"] == "volumes-hook-failed"]
    assert "still running after 0.5 s (timeout_seconds)" in warned["message"], out
    assert code == 0, out
    assert _backed_up(tmp_path) == {"pg/data/base.bin"}


def test_the_rendered_role_grants_exec_only_to_a_source_with_hooks(tmp_path, capsys):
    def roles(hooks: list[dict]) -> list[dict]:
        plan = volumes_plan(tmp_path, "kubeconfig", "source", namespaces=["pg"], schedule="0 * * * *",
                            **({"hooks": hooks} if hooks else {}))
        assert main(["deploy", "render", "--plan", plan, "--image", "dr:test", "-q"]) == 0
        docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
        return [rule for d in docs if d["kind"] == "Role" and d["metadata"].get("namespace") == "pg"
                for rule in d["rules"]]

    def execs(rules):
        return [r for r in rules if "pods/exec" in r.get("resources", [])]
    assert execs(roles([])) == []
    (rule,) = execs(roles([_hook(pre="checkpointed")]))
    assert "create" in rule["verbs"]
