"""The README's first command: `dr demo` runs the whole job on local stand-ins and succeeds."""

import re

import pytest

from dr.cli.main import main


def test_demo_backs_up_verifies_and_restores(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "demo")]) == 0
    out, err = capsys.readouterr()
    assert re.search(r"0 B uploaded in 0 new blobs, 1\d unchanged artifacts reused", out)
    assert "its tensors equal the saved ones" in out  # a real DCP checkpoint restored and loaded
    assert re.search(r"\d KiB written to DR copies outside the repository", out)  # the checkpoint
    assert "no problems found" in out
    assert "identical to the originals" in out
    assert "MLflow model-registry part was left out" in err and "./scripts/demo --with-mlflow" in err
    assert "training recovery drills were left out" in err and "./scripts/demo --with-training" in err
    # readiness: run-a saves the full training state, run-b the weights alone (docs/readiness.md)
    assert "  newest   step 200: resumable" in out
    assert "run-b/step-200: serves, cannot resume: missing optimizer" in out
    assert "$ dr advise checkpoints --plan" in out and "advised  every 1h5m44s" in out  # sqrt(2 x 24h x 90s)
    assert "AGE-SECRET-KEY" not in out
    assert "dr-image-in-failed-domain" in out and "it found the planted blocker" in out
    assert (tmp_path / "demo" / "audit.html").read_text().count("<svg") >= 1


def test_demo_with_training_resumes_the_failed_run_at_world_sizes_1_and_3(tmp_path, capsys):
    """Issue 28's "done when": run-a trained for real (torchrun, DCP) until it fails, backed up, and
    resumed from its DR copy at world sizes 1 and 3, both passing their continuity checks."""
    assert main(["demo", "--dir", str(tmp_path / "demo"), "--with-training"]) == 0
    out, err = capsys.readouterr()
    assert "training drills were left out" not in err
    for world_size in ("1", "3"):
        drill = out.split(f"training run-a at world size {world_size};", 1)[1].split("recorded as", 1)[0]
        assert re.search(r"result: (RECOVERED|PARTIAL): resumed at step 21, 6 continuity checks passed", drill), drill
        for check in ("lr-continues", "data-order", "loss-repeats"):
            assert f"check {check}: ok:" in drill
        # the saves are dated an hour apart, the last an hour before the demo ran on: about 1h lost
        assert re.search(r"load_and_reshard +\d", drill) and re.search(r"RPO: 5 steps, (59m\d*s|1h)", drill)
        assert "GPU-hours (8 GPUs)" in drill
    assert "identical to the originals" in out


def test_demo_with_the_stand_in_cluster_restores_it_and_audits_its_image(tmp_path, capsys):
    from tests.harness.standins import IN_CLUSTER_IMAGE, start

    source, recovery = start(str(tmp_path / "kubeconfig.yaml"))
    try:
        assert main(["demo", "--dir", str(tmp_path / "demo"), "--kubeconfig", str(tmp_path / "kubeconfig.yaml")]) == 0
        [deployment] = recovery.list_objects("apps/v1", "Deployment", "team-a")
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == IN_CLUSTER_IMAGE
        assert recovery.list_objects("kueue.x-k8s.io/v1beta2", "ClusterQueue"), "Kueue quotas not restored"
    finally:
        source.stop()
        recovery.stop()
    out = capsys.readouterr().out
    assert "image-in-failed-domain" in out and IN_CLUSTER_IMAGE in out


def test_demo_with_registries_mirrors_the_images_and_the_recovered_workload_runs_the_copy(tmp_path, capsys):
    """What ./scripts/demo runs: the stand-in cluster plus its in-cluster registry and a DR registry
    (real docker-registry processes). The trainer's image is copied by digest, the audit calls it
    remapped, and the whole-plan restore points the recovered Deployment at the DR copy."""
    from tests.harness.standins import IN_CLUSTER_IMAGE, start, start_registries

    source, recovery = start(str(tmp_path / "kubeconfig.yaml"))
    registries = start_registries()
    try:
        code = main(["demo", "--dir", str(tmp_path / "demo"), "--kubeconfig", str(tmp_path / "kubeconfig.yaml"),
                     "--registry", registries[0].url, "--dr-registry", registries[1].url])
        assert code == 0, capsys.readouterr()
        [deployment] = recovery.list_objects("apps/v1", "Deployment", "team-a")
        image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
        path = "mirror/registry.kube-system.svc.cluster.local-5000/team-a/trainer"
        assert image.startswith(f"{registries[1].host}/{path}@sha256:")
        assert registries[1].client().head_manifest(path, image.rpartition("@")[2])
    finally:
        for server in (source, recovery, *registries):
            server.stop()
    out = capsys.readouterr().out
    audit = out[out.index("# DR audit of plan"):]
    assert re.search(rf"dependency-remapped.*image '{re.escape(IN_CLUSTER_IMAGE)}'", audit)
    assert "image-in-failed-domain" not in audit.replace("dr-image-in-failed-domain", "")
    assert "dr-image-in-failed-domain" in audit and "unknown-location" not in audit


def test_demo_with_openbao_backs_up_the_snapshot_and_restores_it_into_a_fresh_server(tmp_path, capsys):
    """What ./scripts/demo --with-vault adds: two real OpenBao raft servers (the
    stand-in script's), the platform's snapshot backed up, restored into the fresh one, unsealed
    with the original shares and its secret read back; no token or secret value printed."""
    from tests.harness.standins import start_vaults

    credentials = tmp_path / "vault-credentials"
    source, target = start_vaults(str(credentials))
    try:
        secret = source.client().secrets.kv.v2.read_secret_version("team-a/wandb", mount_point="secret",
                                                                  raise_on_deleted_version=True)
        code = main(["demo", "--dir", str(tmp_path / "demo"), "--vault", source.address,
                     "--vault-target", target.address, "--vault-credentials", str(credentials)])
        out = capsys.readouterr().out
        assert code == 0, out
        restored = target.client(source.root_token).secrets.kv.v2.read_secret_version(
            "team-a/wandb", mount_point="secret", raise_on_deleted_version=True)
        assert restored["data"]["data"] == secret["data"]["data"]
    finally:
        source.stop()
        target.stop()
    assert re.search(r"0 B uploaded in 0 new blobs, 1\d unchanged artifacts reused", out)  # the Vault unchanged too
    assert f"--source platform-vault --to {target.address} --target-token-file" in out
    assert f"restored OpenBao at {target.address} unsealed with the original shares" in out
    assert "secret/team-a/wandb (version 1, 1 key) equals the original's" in out
    for value in (source.root_token, target.root_token, *source.unseal_keys, secret["data"]["data"]["key"]):
        assert value not in out
    assert "unknown-location" not in out


@pytest.fixture(scope="module")
def two_mlflow_servers(tmp_path_factory):
    """Two real, empty MLflow servers, started side by side as scripts/demo's stand-ins start them."""
    from tests.harness.standins import mlflow_servers, start_all

    servers = mlflow_servers(str(tmp_path_factory.mktemp("demo-mlflow")))
    try:
        start_all(servers)
        yield [f"http://127.0.0.1:{server.port}" for server in servers]
    finally:
        for server in servers:
            server.stop()


def test_demo_with_mlflow_restores_the_registry_and_champion_keeps_its_version(tmp_path, capsys, two_mlflow_servers):
    """What ./scripts/demo --with-mlflow adds: a small registry in a real MLflow server, backed up
    with the other sources and restored into a second, empty one, version numbers kept."""
    from tests.mlflow.registries import Rest

    first, second = two_mlflow_servers
    code = main(["demo", "--dir", str(tmp_path / "demo"), "--with-mlflow", "--mlflow", first,
                 "--mlflow-restore", second])
    assert code == 0, capsys.readouterr()
    for url in (first, second):
        rest = Rest(url)
        fraud = rest.get("/registered-models/alias", name="fraud-detector", alias="champion")["model_version"]
        churn = rest.get("/registered-models/alias", name="churn", alias="champion")["model_version"]
        assert (fraud["version"], churn["version"]) == ("3", "2")
        listed = rest.get("/model-versions/search", filter="name='fraud-detector'")["model_versions"]
        assert sorted(int(v["version"]) for v in listed) == [1, 3, 4]  # 2 deleted, and still missing
        run = rest.get("/runs/get", run_id=fraud["run_id"])["run"]["data"]
        assert {p["key"]: p["value"] for p in run["params"]}["lr"] == str(0.1 / 3)
    out, err = capsys.readouterr()
    assert f"$ dr restore --plan {tmp_path}/demo/plan.yaml --source model-registry --to {second}" in out
    assert "models:/fraud-detector@champion resolves to version 3" in out
    assert "MLflow model-registry part was left out" not in err
    audit = out[out.index("# DR audit of plan"):]
    # the MLflow service is placed in region-a, beside cluster-a: losing the cluster leaves it and the weights
    assert "(by location mlflow-service)" not in audit and not re.search(r"BLOCKER.*(mlflow-server|model-artifacts)", audit)


def test_demo_with_mlflow_needs_both_servers(tmp_path, capsys):
    assert main(["demo", "--dir", str(tmp_path / "demo"), "--with-mlflow"]) == 2
    assert "--mlflow URL and --mlflow-restore URL" in capsys.readouterr().err


def test_the_walkthrough_reads_the_documented_exit_codes():
    """dr.demo may not import the CLI, so it keeps the three exit codes it reads from `main`: they
    are the documented table's (dr.cli.exitcodes)."""
    from dr.cli.exitcodes import Exit
    from dr.demo import walkthrough

    assert (walkthrough.OK, walkthrough.FAILURE, walkthrough.BLOCKERS) == (Exit.OK, Exit.FAILURE, Exit.BLOCKERS)
