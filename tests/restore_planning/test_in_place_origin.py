"""An in-place restore is judged where it writes: the plan and the audit give one answer.

tests/plugins/acme_ledgers keeps the default `destinations()` (`to=None`: back where each
ledger came from) and declares its share's dependency kind in `origin_kinds`. With the share in
the lost cluster, the audit calls it a blocker; the restore plan used to judge an origin only
when `destinations()` placed a `to`, so the same step was READY, writing into the lost cluster.
Real backup, repository, audit and restore planning through dr's command line.
"""

from __future__ import annotations

import json

import pytest

from dr.cli.exitcodes import Exit
from tests.plugins.installing import install_distribution
from tests.restore_planning.worlds import World

LOST_SHARE = "nfs://ledgers.cluster-a.internal/books"  # the plan's rule places *.cluster-a.internal
SURVIVING_SHARE = "nfs://ledgers.region-b.example.com/books"


@pytest.fixture
def ledgers(tmp_path, monkeypatch, capsys) -> World:
    site = tmp_path / "site"
    install_distribution(site, "acme_ledgers", {"ledgers": "tests.plugins.acme_ledgers:LedgersExporter"})
    monkeypatch.syspath_prepend(str(site))
    w = World(tmp_path / "platform")
    w.back_up_beside_config({"name": "books", "type": "ledgers", "share": LOST_SHARE}, {"2026.csv": "date,amount\n"})
    capsys.readouterr()
    return w


def _audit_verdicts(w: World, capsys) -> dict[str, str]:
    w.dr("audit", "--plan", w.plan, "--failed", "cluster-a", "--json")
    return {f["reference"]: f["severity"] for f in json.loads(capsys.readouterr().out)["findings"]
            if f["scenario"] == "cluster-a"}


def _books_step(w: World, capsys, *extra: str) -> tuple[int, dict]:
    code = w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "--dry-run", "--json", *extra))
    return code, next(s for s in json.loads(capsys.readouterr().out)["steps"] if s["name"] == "books")


def test_an_in_place_restore_into_the_lost_share_is_refused_as_the_audit_calls_it_a_blocker(ledgers, capsys):
    assert _audit_verdicts(ledgers, capsys)[LOST_SHARE] == "blocker"
    code, books = _books_step(ledgers, capsys)
    assert [d["to"] for d in books["destinations"]] == [None]
    assert books["status"] == "refused" and books["verdict"] == "blocker"
    [need] = [n for n in books["needs"] if n["reference"] == LOST_SHARE]
    assert need["kind"] == "ledger-share" and need["verdict"] == "blocker"
    assert need["reason"].startswith("the step restores in place, where its artifacts came from (no --to)")
    assert "lost when cluster-a" in need["reason"] and need["reason"].endswith("or give --to books=DEST")
    assert code != Exit.OK


def test_a_to_elsewhere_or_a_remap_of_the_share_makes_it_ready(ledgers, capsys):
    """(The audit judges no plan remap, of any dependency kind, so it keeps its blocker there.)"""
    code, books = _books_step(ledgers, capsys, "--to", f"books={ledgers.root / 'elsewhere'}")
    assert code == Exit.OK and books["status"] == "ready"  # the origin is not written then
    assert not [n for n in books["needs"] if n["reference"] == LOST_SHARE]

    ledgers.remaps = [{"kind": "ledger-share", "old": LOST_SHARE, "new": SURVIVING_SHARE,
                       "reason": "the share is replicated to region-b"}]
    plan = ledgers.plan_data()
    plan["locations"].append({"name": "books-b", "domain": "region-b", "hosts": ["ledgers.region-b.example.com"]})
    ledgers.plan_data = lambda: plan
    code, books = _books_step(ledgers, capsys)
    [need] = [n for n in books["needs"] if n["reference"] == LOST_SHARE]
    assert code == Exit.OK and books["status"] == "ready" and need["verdict"] == "remapped"
