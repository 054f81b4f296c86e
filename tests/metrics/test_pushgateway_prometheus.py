"""dr's metrics through a real Pushgateway and a real Prometheus: a `dr backup`, `dr status`,
`dr audit`, `dr drill` and `dr verify` push, Prometheus scrapes the gateway (1 s, honor_labels),
and PromQL through the HTTP API gives back the values the commands printed with --json."""

from __future__ import annotations

import json
import re
import shutil
import urllib.request

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.metrics.plans import data_folder, files_plan


def _run(capsys, *argv: str) -> tuple[int, dict, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def _by(values: dict[tuple, float], key: str) -> dict[str, float]:
    return {dict(labels)[key]: value for labels, value in values.items()}


@pytest.fixture
def two_sources(tmp_path):
    folders = {"config": data_folder(tmp_path, "config"), "models": data_folder(tmp_path, "models", files=5)}
    return files_plan(tmp_path, "pushed-backup", folders), folders


def test_backups_pushed_are_scraped_and_read_back_with_promql(two_sources, pushgateway, prometheus, capsys):
    plan, folders = two_sources
    code, first, err = _run(capsys, "backup", "--plan", plan, "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK and "warning" not in err
    by_source = {s["name"]: s for s in first["results"][0]["sources"]}
    ok = prometheus.wait_for('dr_backup_success{plan="pushed-backup"}', lambda v: len(v) == 2)
    assert {dict(k)["source"]: (dict(k)["job"], dict(k)["target"], v) for k, v in ok.items()} == \
        {"config": ("dr", "dr-site", 1.0), "models": ("dr", "dr-site", 1.0)}
    objects = _by(prometheus.values('dr_backup_artifacts{plan="pushed-backup"}'), "source")
    assert objects == {name: float(s["artifacts"]) for name, s in by_source.items()} and objects["models"] == 6
    sizes = _by(prometheus.values('dr_backup_source_bytes{plan="pushed-backup"}'), "source")
    assert sizes == {name: float(s["bytes"]) for name, s in by_source.items()}
    stats = first["results"][0]["stats"]
    uploaded = prometheus.values('dr_backup_uploaded_bytes{plan="pushed-backup"}')
    assert _by(uploaded, "source") == {"config,models": float(stats["bytes_uploaded"])}
    assert prometheus.values('dr_backup_schedule_interval_seconds{plan="pushed-backup"}') == {
        (("job", "dr"), ("plan", "pushed-backup"), ("source", name)): 3600.0 for name in folders}
    first_success = _by(prometheus.values('dr_backup_last_success_timestamp_seconds{plan="pushed-backup"}'),
                        "source")

    # An unchanged second run reuses everything: the reused bytes are every byte of the sources.
    code, second, _ = _run(capsys, "backup", "--plan", plan, "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK and second["results"][0]["stats"]["bytes_read"] == 0
    reused = prometheus.wait_for('dr_backup_reused_bytes{plan="pushed-backup"}', lambda v: any(v.values()))
    assert list(reused.values()) == [sum(sizes.values())]

    # models fails (its folder is gone): its success drops to 0, its last success stays as it was.
    shutil.rmtree(folders["models"])
    code, third, _ = _run(capsys, "backup", "--plan", plan, "--json", "--pushgateway", pushgateway)
    assert code == Exit.PARTIAL
    ok = prometheus.wait_for('dr_backup_success{plan="pushed-backup"}', lambda v: 0.0 in v.values())
    assert _by(ok, "source") == {"config": 1.0, "models": 0.0}
    success = _by(prometheus.values('dr_backup_last_success_timestamp_seconds{plan="pushed-backup"}'), "source")
    failure = _by(prometheus.values('dr_backup_last_failure_timestamp_seconds{plan="pushed-backup"}'), "source")
    assert success["models"] < failure["models"] and success["config"] > first_success["config"]
    errors = prometheus.values('dr_backup_findings{plan="pushed-backup", severity="error"}')
    assert _by(errors, "source") == {"config": 0.0, "models": 1.0}
    # The alert's expressions over what dr pushed: this failure is the one DrBackupFailed finds.
    failed = prometheus.values('dr_backup_success{plan="pushed-backup"} == 0')
    assert [dict(k)["source"] for k in failed] == ["models"]


def test_status_audit_drill_and_verify_pushed_are_read_back(tmp_path, pushgateway, prometheus, capsys):
    plan = files_plan(tmp_path, "pushed-status", {"config": data_folder(tmp_path, "config")})
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    capsys.readouterr()
    code, status, _ = _run(capsys, "status", "--plan", plan, "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK
    code, audit, _ = _run(capsys, "audit", "--plan", plan, "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK
    code, drill, _ = _run(capsys, "drill", "--plan", plan, "--failed", "cluster-a", "--to", str(tmp_path / "scratch"),
                          "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK and drill["result"] == "recovered"
    code, verify, _ = _run(capsys, "verify", "--plan", plan, "--read-data", "--json", "--pushgateway", pushgateway)
    assert code == Exit.OK

    # verify pushed last: once a scrape holds its series, it holds everything pushed before it
    prometheus.wait_for('dr_verify_read_data{plan="pushed-status"}', lambda v: len(v) == 1, timeout=60.0)
    phases = prometheus.wait_for('dr_drill_rto_seconds{plan="pushed-status"}', lambda v: len(v) == 4)
    assert _by(phases, "phase") == pytest.approx(drill["rto"]["phases"])
    assert list(prometheus.values('dr_drill_rpo_seconds{plan="pushed-status"}').values()) == \
        pytest.approx([drill["rpo_seconds"]])
    assert list(prometheus.values('dr_drill_recovered{plan="pushed-status"}').values()) == [1.0]
    age = prometheus.values('dr_rpo_age_seconds{plan="pushed-status"}')
    assert list(age.values()) == pytest.approx([status["sources"][0]["age_seconds"]])
    assert _by(prometheus.values('dr_rpo_objective_seconds{plan="pushed-status"}'), "source") == {"config": 7200.0}
    assert _by(prometheus.values('dr_rto_objective_seconds{plan="pushed-status"}'), "source") == {"config": 1800.0}
    assert list(prometheus.values('dr_rpo_breach{plan="pushed-status"}').values()) == [0.0]
    blockers = _by(prometheus.values('dr_audit_blockers{plan="pushed-status"}'), "scenario")
    expected = {s["name"]: sum(1 for f in audit["findings"] if f["severity"] == "blocker"
                               and f.get("scenario") in (None, s["name"])) for s in audit["scenarios"]}
    assert blockers == {name: float(n) for name, n in expected.items()} and blockers
    # one scenario, one label: the drill's series and the audit's name it alike
    assert {dict(k)["scenario"] for k in phases} == {"cluster-a"} and "cluster-a" in blockers
    assert list(prometheus.values('dr_verify_problems{plan="pushed-status"}').values()) == [0.0]
    assert list(prometheus.values('dr_verify_read_data{plan="pushed-status"}').values()) == [1.0]
    assert verify["ok"] is True
    # The audit, drill and verify are plan-wide: grouped by plan alone, so no source label.
    assert all("source" not in dict(k) for k in phases)


def test_a_backup_to_s3_reaches_prometheus(tmp_path, s3_bucket, moto_endpoint, pushgateway, prometheus, capsys):
    """The CronJob's case: a backup to an S3 target (moto), its metrics pushed and scraped."""
    from tests.cli.planfiles import s3_target

    plan = files_plan(tmp_path, "to-s3", {"config": data_folder(tmp_path, "config")},
                      target=s3_target(s3_bucket(), moto_endpoint, region="us-east-1"))
    code, document, err = _run(capsys, "backup", "--plan", plan, "--json", "--quiet", "--pushgateway", pushgateway)
    assert code == Exit.OK and not err
    stats = document["results"][0]["stats"]
    found = prometheus.wait_for('dr_backup_uploaded_bytes{plan="to-s3"}', bool)
    assert list(found.values()) == [float(stats["bytes_uploaded"])] and stats["bytes_uploaded"] > 0
    duration = prometheus.values('dr_backup_duration_seconds{plan="to-s3"}')
    assert list(duration.values()) == [stats["duration_seconds"]]


def test_a_gateway_that_refuses_is_a_warning_naming_it_without_its_password(tmp_path, capsys):
    from tests.servers import free_port

    plan = files_plan(tmp_path, "unreachable", {"config": data_folder(tmp_path, "config")})
    url = f"http://dr-pusher:s3cret-pass@127.0.0.1:{free_port()}"
    code, document, err = _run(capsys, "backup", "--plan", plan, "--json", "--quiet", "--pushgateway", url)
    assert code == Exit.OK and document["results"][0]["snapshot"]  # the backup itself landed
    # --quiet (as the CronJob runs) silences notes, not this warning
    assert "warning: metrics not pushed to http://***@127.0.0.1:" in err and "s3cret-pass" not in err
    assert "Connection refused" in err


def test_every_dashboard_query_is_valid_promql_and_finds_pushed_backups(tmp_path, pushgateway, prometheus, capsys):
    from tests.metrics.test_dashboard_and_docs import dashboard_queries

    plan = files_plan(tmp_path, "dashboard", {"config": data_folder(tmp_path, "config")})
    assert main(["backup", "--plan", plan, "-q", "--pushgateway", pushgateway]) == Exit.OK
    prometheus.wait_for('dr_backup_success{plan="dashboard"}', bool)
    for query in dashboard_queries():
        # Grafana's label_values(METRIC, LABEL) lists LABEL over METRIC's series: ask for those
        promql = re.sub(r"^label_values\((.+), *\w+\)$", r"\1", query).replace("$plan", "dashboard")
        answer = prometheus.query(promql)
        assert answer["status"] == "success", (query, answer)
        if "dr_backup_" in query:
            assert answer["data"]["result"], f"no data for the dashboard's {query}"


def test_basic_auth_from_the_url_or_the_environment_and_a_refusal_is_a_warning(tmp_path, monkeypatch, capsys):
    """A Pushgateway behind basic auth (its --web.config.file, a bcrypt hash as Prometheus's
    exporter toolkit wants): the right password pushes, a wrong one is a warning with the
    gateway's 401, and no password is ever printed."""
    import base64
    import warnings

    from tests.metrics.conftest import LOOPBACK
    from tests.servers import ServerProcess

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # bcrypt through the C library, as tests/harness/registries.py does

        hashed = crypt.crypt("right-pass", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    config = tmp_path / "web.yml"
    config.write_text(f"basic_auth_users:\n  pusher: '{hashed}'\n")
    gateway = ServerProcess(lambda port: ["prometheus-pushgateway", f"--web.listen-address=127.0.0.1:{port}",
                                          f"--web.config.file={config}", "--persistence.file="],
                            lambda port: f"http://127.0.0.1:{port}/-/ready", name="pushgateway-auth")
    gateway._wait_ready = lambda: _answers_401(gateway)
    plan = files_plan(tmp_path, "authenticated", {"config": data_folder(tmp_path, "config")})
    with gateway:
        base = f"127.0.0.1:{gateway.port}"
        code, _, err = _run(capsys, "backup", "--plan", plan, "--json", "--pushgateway", f"http://pusher:wrong-pass@{base}")
        assert code == Exit.OK and "warning: metrics not pushed to http://***@127.0.0.1:" in err
        assert "401" in err and "wrong-pass" not in err
        monkeypatch.setenv("DR_PUSHGATEWAY_PASSWORD", "right-pass")
        code, _, err = _run(capsys, "backup", "--plan", plan, "--json", "--pushgateway", f"http://pusher@{base}")
        assert code == Exit.OK and "warning" not in err
        request = urllib.request.Request(f"http://{base}/metrics", headers={
            "Authorization": "Basic " + base64.b64encode(b"pusher:right-pass").decode()})
        with LOOPBACK.open(request, timeout=5) as response:
            exposed = response.read().decode()
    assert 'dr_backup_success{instance="",job="dr",plan="authenticated",source="config",target="dr-site"} 1' in exposed


def _answers_401(server) -> bool:
    """Ready when it refuses a request without credentials (it is up, and auth is on)."""
    import time
    from tests.metrics.conftest import LOOPBACK

    deadline = time.monotonic() + server.timeout
    while time.monotonic() < deadline and server.process.poll() is None:
        try:
            LOOPBACK.open(f"http://127.0.0.1:{server.port}/-/ready", timeout=1)
            return False  # it answered without credentials: auth is off
        except urllib.error.HTTPError as exc:
            return exc.code == 401
        except OSError:
            time.sleep(0.05)
    return False
