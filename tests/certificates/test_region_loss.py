"""A region lost: the audit of a plan whose in-use certificate exists only there (dr backup and dr audit
through dr's entry point, against moto's ACM over HTTP).

The plan has two region failure domains and places ACM ARNs by region (locations with the prefix
`arn:aws:acm:<region>:`); the DR repository is a folder placed in neither. A certificate in use in
us-east-1 with nothing for its domains in us-west-2 is a blocker when us-east-1 is lost, with its
runbook; with a certificate for the same domains in us-west-2, it is not.
"""

from __future__ import annotations

import json

import yaml

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from tests.certificates.conftest import import_leaf, make_leaf, put_in_use

NAMES = ["shop.example.com", "www.shop.example.com"]


def write_plan(tmp_path, endpoint: str) -> str:
    plan = {
        "version": 1, "name": "shop",
        "failure_domains": [{"name": "aws", "kind": "provider", "children": [
            {"name": "us-east-1", "kind": "region"}, {"name": "us-west-2", "kind": "region"}]},
            {"name": "vault-site", "kind": "site"}],
        "locations": [{"name": f"acm-{r}", "domain": r, "kind": "certificates", "prefixes": [f"arn:aws:acm:{r}:"]}
                      for r in ("us-east-1", "us-west-2")],
        "protects_against": ["us-east-1", "us-west-2"],
        "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "vault-site"}],
        "sources": [{"name": "certs", "type": "certificates", "rpo": "1d", "rto": "4h",
                     "regions": ["us-east-1", "us-west-2"], "endpoint_url": endpoint}],
    }
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan))
    return str(path)


def audit(tmp_path, endpoint, capsys) -> tuple[int, dict]:
    path = write_plan(tmp_path, endpoint)
    assert main(["backup", "--plan", path, "-q"]) == Exit.OK
    capsys.readouterr()
    code = main(["audit", "--plan", path, "--failed", "us-east-1", "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_a_certificate_in_use_only_in_the_lost_region_is_a_blocker_with_its_runbook(tmp_path, acm_endpoint, capsys):
    used = import_leaf(acm_endpoint, "us-east-1", make_leaf(NAMES, days_left=300))
    put_in_use(acm_endpoint, "us-east-1", used, "shop")
    import_leaf(acm_endpoint, "us-west-2", make_leaf(["other.example.com"], days_left=300))  # other names
    code, report = audit(tmp_path, acm_endpoint, capsys)
    assert code == Exit.BLOCKERS
    (finding,) = [f for f in report["findings"] if f["code"] == "certificate-only-in-failed-region"]
    assert finding["severity"] == "blocker" and finding["reference"] == used
    assert finding["runbook"] == "runbooks/certificate-only-in-failed-region.md"


def test_a_certificate_for_the_same_domains_in_the_surviving_region_stands_in(tmp_path, acm_endpoint, capsys):
    used = import_leaf(acm_endpoint, "us-east-1", make_leaf(NAMES, days_left=300))
    put_in_use(acm_endpoint, "us-east-1", used, "shop")
    import_leaf(acm_endpoint, "us-west-2", make_leaf(["*.shop.example.com", "shop.example.com"], days_left=300))
    code, report = audit(tmp_path, acm_endpoint, capsys)
    assert code == Exit.OK, report["findings"]
    assert not [f for f in report["findings"] if f["severity"] == "blocker"]
    assert [f["reference"] for f in report["findings"] if f["code"] == "dependency-remapped"] == [used]


def _restore_step(tmp_path, *extra: str) -> tuple[int, dict]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["restore", "--plan", str(tmp_path / "plan.yaml"), "--failed", "us-east-1", "--dry-run", "--json",
                     *extra])
    return code, next(s for s in json.loads(out.getvalue())["steps"] if s["name"] == "certs")


def _blockers(step: dict) -> list[tuple[str, str]]:
    return sorted((n["kind"], n["reference"]) for n in step["needs"] if n["verdict"] == "blocker")


def test_the_restore_plan_refuses_an_in_place_import_into_the_lost_region(tmp_path, acm_endpoint, capsys):
    """The restore imports each certificate back into its own region (to=None), so the plan judges
    that region as where the step writes (Destination.writes_to), whether the certificate is in
    use or not, and the in-use one's origin as the audit does. A stand-in in the surviving region
    satisfies the audit, not the import into the lost region: --to the surviving region does."""
    unused = import_leaf(acm_endpoint, "us-east-1", make_leaf(["old.example.com"], days_left=300))
    audit(tmp_path, acm_endpoint, capsys)
    code, step = _restore_step(tmp_path)
    assert step["status"] == "refused" and code != Exit.OK, step
    assert _blockers(step) == [("destination", unused)]  # before writes_to: ready, and the import failed
    used = import_leaf(acm_endpoint, "us-east-1", make_leaf(NAMES, days_left=300))
    put_in_use(acm_endpoint, "us-east-1", used, "shop")
    audit(tmp_path, acm_endpoint, capsys)
    code, step = _restore_step(tmp_path)
    assert ("acm-certificate", used) in _blockers(step) and step["status"] == "refused", step
    import_leaf(acm_endpoint, "us-west-2", make_leaf(["*.shop.example.com", "shop.example.com"], days_left=300))
    code, findings = audit(tmp_path, acm_endpoint, capsys)
    code, step = _restore_step(tmp_path)
    assert [k for k, _ in _blockers(step)] == ["destination"], step  # the stand-in covers the origin
    code, step = _restore_step(tmp_path, "--to", "certs=us-west-2")
    assert code == Exit.OK and step["status"] == "ready", step
