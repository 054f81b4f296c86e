"""Faults at backup time: each a finding naming the chart (or the repository and what needs it);
the other charts still copy."""

from __future__ import annotations

import hashlib
import shutil

from tests.helm.charts import ChartServer, write_index
from tests.helm.conftest import backup, plan_with, source_result
from tests.servers import free_port


def test_down_repository_lying_digest_and_missing_version_are_findings_and_others_copy(tmp_path, charts):
    lying = tmp_path / "lying"
    shutil.copytree(charts.packaged, lying)
    write_index(lying, digests={"api-0.1.0.tgz": hashlib.sha256(b"not this chart").hexdigest()})
    server = ChartServer(lying)
    down = f"http://127.0.0.1:{free_port()}"
    try:
        result, found, _ = backup(plan_with(tmp_path, {"timeout_seconds": 5, "charts": [
            {"repo": down, "name": "web", "version": "1.0.0"},
            {"repo": server.url, "name": "api", "version": "0.1.0"},
            {"repo": server.url, "name": "web", "version": "9.9.9"},
            {"oci": charts.oci_api, "version": "0.0.7"},
            {"repo": server.url, "name": "web", "version": "1.1.0"}]}))
    finally:
        server.stop()
    source = source_result(result)
    assert source.ok  # one chart copied: the source is not failed
    assert set(found) == {f"{server.url}/web:1.1.0"}
    by_code = {}
    for finding in source.findings:
        by_code.setdefault(finding["code"], []).append(finding)
    assert [f["chart"] for f in by_code["chart-unavailable"]] == [f"{down}/web:1.0.0"]
    assert "cannot connect" in by_code["chart-unavailable"][0]["message"]
    [mismatch] = by_code["chart-digest-mismatch"]
    assert mismatch["chart"] == f"{server.url}/api:0.1.0" and "refused" in mismatch["message"]
    assert {f["chart"] for f in by_code["chart-missing"]} == {f"{charts.oci_api}:0.0.7", f"{server.url}/web:9.9.9"}
    assert all(f["severity"] == "error" for f in source.findings)


def test_a_source_with_no_chart_copied_fails_with_the_reason(tmp_path):
    result, found, _ = backup(plan_with(tmp_path, {"timeout_seconds": 5, "charts": [
        {"repo": f"http://127.0.0.1:{free_port()}", "name": "web", "version": "1.0.0"}]}))
    source = source_result(result)
    assert not source.ok and "no chart copied" in source.error and found == {}
