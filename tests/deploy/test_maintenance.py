"""The rendered deployment is a whole operation (issue 30): beside the backups, prune, verify,
status and audit CronJobs from the plan alone, each publishing its metrics, and a NetworkPolicy
that lets exactly those out: the targets, the sources, the Pushgateway and the API server."""

from __future__ import annotations

import pytest

from tests.deploy.conftest import MULTI_REGION, backups, by_kind, container, documents, render

PUSHGATEWAY = "http://prometheus-pushgateway.monitoring.svc:9091"


def _cronjobs(docs: list[dict]) -> dict[str, dict]:
    return {c["metadata"]["name"]: c for c in by_kind(docs, "CronJob")}


def test_a_one_target_plan_gets_one_cronjob_of_each_task(wide_plan, rendered_json):
    report = rendered_json("--plan", wide_plan, "--pushgateway", PUSHGATEWAY)
    docs = documents(report["manifest"])
    tasks = {name: cron for name, cron in _cronjobs(docs).items() if cron not in backups(docs)}
    assert set(tasks) == {"dr-prune", "dr-verify", "dr-status", "dr-audit"}
    commands = {name: container(cron)["command"] for name, cron in tasks.items()}
    tail = ["--quiet", "--pushgateway", PUSHGATEWAY]
    assert commands["dr-prune"] == ["dr", "prune", "--plan", "/etc/dr/plan.yaml", "--lock-wait", "1800", *tail]
    assert commands["dr-verify"] == ["dr", "verify", "--plan", "/etc/dr/plan.yaml", "--read-data-subset", "auto/7",
                                     "--lock-wait", "1800", *tail]
    assert commands["dr-status"] == ["dr", "status", "--plan", "/etc/dr/plan.yaml", "--lock-wait", "300", *tail]
    assert commands["dr-audit"] == ["dr", "audit", "--plan", "/etc/dr/plan.yaml", *tail]
    for cron in backups(docs):  # the backups publish too
        assert container(cron)["command"][-2:] == ["--pushgateway", PUSHGATEWAY]
    assert [m["name"] for m in report["maintenance"]] == ["dr-prune", "dr-verify", "dr-status", "dr-audit"]
    # the verdicts fail the Job at once instead of a retry: damage, an RPO breach, blockers
    verdicts = {name: cron["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"]
                for name, cron in tasks.items()}
    assert verdicts == {"dr-prune": [2, 6], "dr-verify": [2, 6], "dr-status": [2, 7], "dr-audit": [2, 4]}


def test_prune_and_audit_get_only_the_targets_needs(wide_plan, rendered_json):
    docs = documents(rendered_json("--plan", wide_plan)["manifest"])
    cronjobs = _cronjobs(docs)
    for name in ("dr-prune", "dr-audit"):  # they read the repository only: no source credential, no API token
        pod = cronjobs[name]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False
        assert not any(m["mountPath"].startswith("/var/run/secrets/dr/vault") for m in pod["containers"][0]["volumeMounts"])
    status = cronjobs["dr-status"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    # status and verify check the copies exporters keep outside the repository: the sources' needs
    assert any(m["mountPath"] == "/var/run/secrets/dr/vault-token" for m in status["containers"][0]["volumeMounts"])
    for cron in cronjobs.values():  # the manifest cache has its own folder, on a volume of its own
        pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert {"name": "DR_CACHE_DIR", "value": "/var/cache/dr"} in pod["containers"][0]["env"]
        assert {"name": "cache", "mountPath": "/var/cache/dr"} in pod["containers"][0]["volumeMounts"]


def test_the_network_policy_lets_out_the_pushgateway_and_the_api_server_only(wide_plan, rendered_json):
    report = rendered_json("--plan", wide_plan, "--pushgateway", PUSHGATEWAY, "--api-server-cidr", "10.0.0.1/32",
                           "--api-server-cidr", "10.0.0.2")
    docs = documents(report["manifest"])
    policy, = by_kind(docs, "NetworkPolicy")
    egress = policy["spec"]["egress"]
    assert {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
            "ports": [{"protocol": "TCP", "port": 9091}]} in egress
    assert {"to": [{"ipBlock": {"cidr": "10.0.0.1/32"}}, {"ipBlock": {"cidr": "10.0.0.2/32"}}],
            "ports": [{"protocol": "TCP", "port": 443}, {"protocol": "TCP", "port": 6443}]} in egress
    # nothing else: DNS, vault's address, the target's namespace, and the two above
    assert len(egress) == 5 and not any("--api-server-cidr" in n for n in report["notes"])
    # the policy selects every dr CronJob's pods, and not the checkpoint shards'
    selector = policy["spec"]["podSelector"]
    assert selector["matchExpressions"][0]["values"] == ["backup", "prune", "verify", "status", "audit"]
    labels = {c["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
              for c in by_kind(docs, "CronJob")}
    assert labels == set(selector["matchExpressions"][0]["values"])
    keys = {k["key"]: k for k in report["secret"]["keys"]}
    assert keys["pushgateway-password"]["optional"] is True  # basic auth, when the Pushgateway has it


def test_a_bad_api_server_cidr_is_a_usage_error(wide_plan, capsys):
    code, _, err = render(["--plan", wide_plan, "--api-server-cidr", "kubernetes"], capsys)
    assert code == 2 and "kubernetes" in err and "Traceback" not in err


@pytest.mark.parametrize("args", [[], ["--pushgateway", PUSHGATEWAY]])
def test_the_stream_has_no_yaml_aliases(args, capsys):
    """A shared dict dumps as &id001/*id001, which kubectl reads but people and some tools do not."""
    code, out, _ = render(["--plan", MULTI_REGION, *args], capsys)
    assert code == 0 and "&id0" not in out and "*id0" not in out
