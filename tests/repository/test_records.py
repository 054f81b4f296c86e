"""Journal and drill records (docs/format.md 4.1, 4.2): keys, bytes, bounded and strict reading."""

from __future__ import annotations

import json
import time

import pytest

from dr.repository import drill_records, journals, layout, records
from dr.repository.records import MalformedRecord, RecordExists
from dr.repository.stores.local import LocalStore

RID = "20261130T101500Z-0a1b2c3d"


@pytest.fixture
def store(tmp_path) -> LocalStore:
    return LocalStore(str(tmp_path / "repo"))


def _plan(store, restore_id=RID) -> dict:
    return journals.put_record(store, restore_id, 0, "plan",
                               {"record": "plan", "snapshot": "1" * 64, "steps": [{"name": "a"}]})


def _drill(drill_id=RID, **changes) -> dict:
    record = {"format": "dr-drill", "version": 1, "id": drill_id, "plan": "p", "plan_file": "p.yaml", "host": "h",
              "started": "2026-11-30T10:15:00.000000Z", "finished": "2026-11-30T10:16:00.000000Z",
              "failed": ["a"], "scenario": "a fails", "target": "t", "snapshot": {"id": "1" * 64, "time": "x"},
              "rpo_seconds": 12.5, "rto": {"total_seconds": 60.0, "phases": {"audit": 1.0}, "steps": {}},
              "rto_estimate": {}, "audit": {}, "restore": {"restore_id": drill_id, "steps": [
                  {"step": "a", "status": "succeeded", "reason": "", "seconds": 1.0}]},
              "verify": {"steps": [{"step": "a", "verified": True}]}, "result": "recovered", "summary": "1 of 1"}
    return {**record, **changes}


def test_keys_are_those_of_the_format():
    assert layout.journal_record_key(RID, 0, "plan") == f"journals/{RID}/000000-plan.json"
    assert layout.journal_record_key(RID, 12, "a-b.c_d") == f"journals/{RID}/000012-a-b.c_d.json"
    assert layout.drill_record_key(RID) == f"drills/{RID}.json"
    assert layout.seq_of_journal_record_key(f"journals/{RID}/000012-x.json") == 12
    assert layout.seq_of_journal_record_key(f"journals/{RID}/notes.txt") is None
    assert layout.restore_id_of_journal_key("journals/tmp/000000-plan.json") is None
    assert layout.drill_id_of_key(f"drills/{RID}.json") == RID and layout.drill_id_of_key("drills/x.json") is None
    for bad in ("../x", "2026", RID + "/x", ""):
        with pytest.raises(ValueError):
            layout.journal_prefix(bad)
        with pytest.raises(ValueError):
            layout.drill_record_key(bad)
    for seq, name in ((-1, "a"), (1_000_000, "a"), (1, "a/b"), (1, ".."), (1, "")):
        with pytest.raises(ValueError):
            layout.journal_record_key(RID, seq, name)
    assert journals.new_restore_id() != journals.new_restore_id() and layout.is_run_id(journals.new_restore_id())


def test_records_are_the_bytes_dr_always_wrote(store, monkeypatch):
    monkeypatch.setattr(records, "utc", lambda: "2026-11-30T10:15:00.123456Z")
    _plan(store)
    assert store.get(f"journals/{RID}/000000-plan.json") == (
        b'{"format":"dr-restore-journal","record":"plan","restore":"20261130T101500Z-0a1b2c3d","seq":0,'
        b'"snapshot":"' + b"1" * 64 + b'","steps":[{"name":"a"}],"time":"2026-11-30T10:15:00.123456Z","version":1}')
    key = drill_records.write(store, _drill())
    assert key == f"drills/{RID}.json"
    assert store.get(key) == json.dumps(_drill(), sort_keys=True, separators=(",", ":")).encode()


def test_a_taken_key_is_never_overwritten(store):
    _plan(store)
    before = store.get(f"journals/{RID}/000000-plan.json")
    with pytest.raises(RecordExists):
        _plan(store)
    drill_records.write(store, _drill())
    with pytest.raises(RecordExists):
        drill_records.write(store, _drill(result="failed"))
    assert store.get(f"journals/{RID}/000000-plan.json") == before
    assert drill_records.read_all(store)[0]["result"] == "recovered"


def test_dr_refuses_to_write_what_it_would_refuse_to_read(store):
    with pytest.raises(MalformedRecord, match="`run` must be int"):
        journals.put_record(store, RID, 1, "run", {"record": "run"})
    with pytest.raises(MalformedRecord, match="`rto.total_seconds`"):
        drill_records.write(store, _drill(rto={}))
    assert list(store.list()) == []


def test_reading_orders_by_seq_and_ignores_keys_that_are_not_records(store):
    _plan(store)
    journals.put_record(store, RID, 10, "run", {"record": "run", "run": 1})
    journals.put_record(store, RID, 2, "a", {"record": "step", "run": 1, "step": "a", "status": "failed"})
    store.put(f"journals/{RID}/README", b"not a record")
    store.put("journals/notes/000000-plan.json", b"not a journal")
    store.put("drills/README.md", b"not a record")
    assert [r["seq"] for r in journals.read_records(store, RID)] == [0, 2, 10]
    assert journals.restore_ids(store) == [RID]
    assert drill_records.read_all(store) == []


@pytest.mark.parametrize("content, fault", [
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "a record is a JSON object"),
    (b"[" * 200_000 + b"]" * 200_000, "not JSON"),
    (b'{"format": "dr-restore-journal", "version": 2}', "this dr reads version 1"),
    (b'{"format": "something-else", "version": 1}', "expected 'dr-restore-journal'"),
    (b'{"format": "dr-restore-journal", "version": true}', "version True"),
])
def test_a_malformed_journal_record_is_refused_with_its_key(store, content, fault):
    _plan(store)
    store.put(f"journals/{RID}/000001-run.json", content)
    with pytest.raises(MalformedRecord, match=fault) as caught:
        journals.read_records(store, RID)
    assert f"journals/{RID}/000001-run.json" in str(caught.value)


@pytest.mark.parametrize("changes, fault", [
    ({"restore": "20000101T000000Z-00000000"}, "not the journal's id"),
    ({"seq": 7}, "not the key's"),
    ({"seq": "1"}, "`seq` must be int"),
    ({"record": "party"}, "none of plan, run, step, end"),
    ({"record": "step", "step": ["a"], "status": "x"}, "`step` must be str"),
    ({"record": "plan", "snapshot": "s", "steps": [{"name": 3}]}, r"`steps\[0\]`: `name` must be str"),
    ({"record": "end", "run": 1, "finished": "yes"}, "`finished` must be bool"),
])
def test_a_journal_record_that_disagrees_with_its_key_or_kind_is_refused(store, changes, fault):
    good = {"format": "dr-restore-journal", "version": 1, "restore": RID, "seq": 1, "time": "t",
            "record": "run", "run": 1}
    store.put(f"journals/{RID}/000001-run.json", json.dumps({**good, **changes}).encode())
    with pytest.raises(MalformedRecord, match=fault):
        journals.read_records(store, RID)


@pytest.mark.parametrize("changes, fault", [
    ({"id": "20000101T000000Z-00000000"}, "is not the key's"),
    ({"rto": {"total_seconds": "fast"}}, "`rto.total_seconds` must be int or float"),
    ({"rpo_seconds": True}, "`rpo_seconds` must be int or float"),
    ({"verify": {"steps": [{"step": "a", "verified": 1}]}}, r"`verify.steps\[0\]`: `verified` must be bool"),
    ({"restore": {"steps": "all"}}, "`restore.steps` must be list, is a str"),
    ({"snapshot": None}, "`snapshot.id` must be str, is missing"),
])
def test_a_malformed_drill_record_is_refused_not_skipped(store, changes, fault):
    store.put(f"drills/{RID}.json", json.dumps(_drill(**changes)).encode())
    with pytest.raises(MalformedRecord, match=fault):
        drill_records.read_all(store)


def test_a_huge_record_costs_bounded_memory_and_time(store, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 1 << 16)
    _plan(store)
    store.put(f"journals/{RID}/000001-run.json", b" " * (1 << 20) + b"{}")
    store.put(f"drills/{RID}.json", b"[" * (1 << 20))
    opened: list[str] = []
    real_open = store.open
    monkeypatch.setattr(store, "open", lambda key: opened.append(key) or real_open(key))
    started = time.monotonic()
    with pytest.raises(MalformedRecord, match="over the 65536-byte limit"):
        journals.read_records(store, RID)
    with pytest.raises(MalformedRecord, match="over the 65536-byte limit"):
        drill_records.read_all(store)
    assert f"drills/{RID}.json" not in opened  # refused from its listed size, never fetched
    assert time.monotonic() - started < 2
    # A store whose listing understates the size is still read no further than the limit.
    with pytest.raises(MalformedRecord, match="over the 65536-byte limit"):
        records.read(store, f"drills/{RID}.json", 10)


def test_a_record_over_the_limit_is_not_written(store, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 1 << 10)
    with pytest.raises(ValueError, match="limit"):
        journals.put_record(store, RID, 0, "plan", {"record": "plan", "snapshot": "s",
                                                     "steps": [{"name": "x" * 2000}]})
