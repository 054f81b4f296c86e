"""A Service named inside a URL is judged as the Service itself (issue 25, item 6), end to end.

The same emulated namespace as test_service_state (a StatefulSet `db` with volumeClaimTemplates,
a stateless Deployment `cache`, the Services in front of them, and `ghost`, a Service the snapshot
lacks; its `api` names each bare), plus a stateless `mlflow` tracking server (named bare too) and a
`client` naming each Service inside a URL or connection string, in env values, args, a ConfigMap's
data and a custom resource's field; the URL forms include a short `<svc>.<ns>.svc` host (which the
plan's `*.svc.cluster.local` rule does not match by itself) and a namespace-qualified short name
`<svc>.<ns>` (no `.svc` at all). Each URL must get its bare name's verdict, with the same reason:
the database a blocker naming its claim, the stateless backends at most `dependency-remapped`
(info) with "recreated by the restore", the ghost a blocker. URLs to hosts that are no Service
keep their verdicts: one of cluster-a's own hosts a blocker, a host nothing places unknown.
"""

from __future__ import annotations

import json

import pytest

from tests.audit import test_service_state as service_state
from tests.audit.test_service_state import deployment, service
from tests.audit.test_coverage import dr  # noqa: F401  (dr is a fixture)
from tests.audit.test_dependency_truth import backup_and_audit
from tests.kubernetes.upstream import cluster_with, schemaless_crd

KINDS = service_state.KINDS
DB, CACHE, MLFLOW, GHOST = (f"{name}.ml.svc.cluster.local" for name in ("db", "cache", "mlflow", "ghost"))
DB_DSN = "postgresql://app:s3cret@db.ml.svc:5432/mlflow"
DB_URL = "postgresql://***@db.ml.svc:5432/mlflow"  # as the scan records it: credentials redacted
DB_GRPC = "grpc://db.ml.svc.cluster.local:50051"
CACHE_URL = "redis://cache.ml:6379/0"
MLFLOW_URL = "http://mlflow.ml.svc.cluster.local:5000/api"
GHOST_URL = "http://ghost.ml.svc:8080/queue"
INTERNAL_URL = "https://models.cluster-a.internal/v1"
UNPLACED_URL = "https://api.example.org/v1"
PIPELINE_CRD = schemaless_crd("pipelines.example.org", "pipelines", "Pipeline")
# the URL forms and the Service each one names: (reference, bare name)
PAIRS = [(DB_URL, DB), (DB_GRPC, DB), (CACHE_URL, CACHE), (MLFLOW_URL, MLFLOW), (GHOST_URL, GHOST)]


def _objects() -> list[dict]:
    """test_service_state's namespace (its `api` names db, cache and ghost bare), a stateless
    `mlflow`, and a `client` naming every Service inside URLs."""
    env = [{"name": n, "value": v} for n, v in (
        ("MLFLOW_HOST", "mlflow.ml.svc"), ("DATABASE_URL", DB_DSN), ("MODELS", INTERNAL_URL),
        ("UPSTREAM", UNPLACED_URL))]
    client = deployment("client", env=env, args=["serve", f"--cache={CACHE_URL}", f"--queue={GHOST_URL}"])
    return service_state._objects() + [deployment("mlflow"), service("mlflow", "mlflow"), client, {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "client", "namespace": "ml"},
        "data": {"settings.yaml": f"feature_store:\n  online: {DB_GRPC}\n"}}, {
        "apiVersion": "pipelines.example.org/v1", "kind": "Pipeline", "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"tracking": {"uri": MLFLOW_URL}}}]


@pytest.fixture(scope="module")
def cluster():
    with cluster_with([PIPELINE_CRD], _objects()) as emulated:
        yield emulated


@pytest.fixture
def audited(dr, capsys, tmp_path, cluster):  # noqa: F811
    return backup_and_audit(dr, capsys, tmp_path, cluster, KINDS)


def _verdicts(document: dict, reference: str) -> dict[str, tuple[str, str]]:
    """scenario (None: any) -> (severity, code) of the reference's findings."""
    return {f["scenario"]: (f["severity"], f["code"]) for f in document["findings"] if f["reference"] == reference}


def _message(document: dict, scenario: str, reference: str) -> str:
    [finding] = [f for f in document["findings"] if f["scenario"] == scenario and f["reference"] == reference]
    return finding["message"]


def test_every_url_gets_its_bare_service_names_verdicts(audited):
    _, document = audited
    for url, name in PAIRS:
        assert _verdicts(document, url) == _verdicts(document, name), (url, name, document["findings"])
    assert _verdicts(document, DB_URL)["cluster-a"] == ("blocker", "dependency-in-failed-domain")
    assert _verdicts(document, GHOST_URL)["cluster-a"][0] == "blocker"
    for url in (CACHE_URL, MLFLOW_URL):
        assert {severity for severity, _ in _verdicts(document, url).values()} == {"info"}, url


def test_the_url_verdicts_give_the_services_reasons(audited):
    _, document = audited
    for url in (DB_URL, DB_GRPC):
        assert f"the state behind service {DB} (PVC data-db-0 of StatefulSet ml/db) lives only in the lost " \
               f"cluster" in _message(document, "cluster-a", url), url
    for url, backend in ((CACHE_URL, "Deployment ml/cache"), (MLFLOW_URL, "Deployment ml/mlflow")):
        message = _message(document, "eu-west-1", url)
        assert "recreated by the restore" in message and backend in message, message


def test_urls_to_other_hosts_are_judged_as_before(audited):
    _, document = audited
    assert _verdicts(document, INTERNAL_URL)["cluster-a"] == ("blocker", "dependency-in-failed-domain")
    assert "state behind" not in _message(document, "cluster-a", INTERNAL_URL)
    assert _verdicts(document, UNPLACED_URL) == {None: ("warning", "unknown-location")}


def test_the_restore_plan_gives_the_urls_the_audits_verdicts(audited, dr, capsys, tmp_path):  # noqa: F811
    """One engine, one answer: the whole-plan restore's needs judge each URL as its Service too."""
    capsys.readouterr()
    dr(["restore", "--plan", str(tmp_path / "plan.yaml"), "--failed", "cluster-a", "--dry-run", "--json"])
    [step] = [s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "cluster"]
    needs = {n["reference"]: n for n in step["needs"]}
    for url, name in PAIRS:
        assert needs[url]["verdict"] == needs[name]["verdict"], (needs[url], needs[name])
    assert "PVC data-db-0" in needs[DB_URL]["reason"] and "recreated by the restore" in needs[CACHE_URL]["reason"]
