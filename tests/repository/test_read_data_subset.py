"""`dr verify --read-data-subset N/T`: a deterministic part of the blobs each run, every blob
within T runs (issue 30: the rendered verify CronJob reads a seventh of the blobs each day)."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import date, timedelta

import pytest

from dr.cli.exitcodes import Exit
from dr.cli.main import main
from dr.repository.data_subsets import DataSubset, SubsetError, parse
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore
from tests.cli.planfiles import files_source, local_target, write_plan

DIGESTS = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(700)]


def test_the_parts_hold_every_blob_exactly_once():
    parts = [DataSubset(n, 7) for n in range(1, 8)]
    for digest in DIGESTS:
        assert sum(p.holds(digest) for p in parts) == 1
    sizes = [sum(p.holds(d) for d in DIGESTS) for p in parts]
    assert min(sizes) > 60 and max(sizes) < 140, sizes  # the digest spreads them: no part is empty or most


def test_the_part_is_the_digests_first_eight_hex_digits_mod_t_plus_one():
    assert DataSubset(3, 7).holds("00000009" + "f" * 56)  # 9 % 7 + 1 == 3
    assert not DataSubset(2, 7).holds("00000009" + "f" * 56)


def test_auto_takes_each_part_once_in_t_consecutive_days():
    start = date(2026, 12, 1)
    assert sorted(parse("auto/7", start + timedelta(days=i)).part for i in range(7)) == list(range(1, 8))
    assert parse("auto/7", date(1970, 1, 1)) == DataSubset(1, 7)
    assert parse("3/7", start) == DataSubset(3, 7)


@pytest.mark.parametrize("text", ["0/7", "8/7", "1/0", "today/7", "3", "1/7/2"])
def test_a_bad_subset_is_refused(text):
    with pytest.raises(SubsetError, match="N/T"):
        parse(text, date(2026, 12, 1))


def test_only_the_part_holding_a_damaged_blob_finds_it(tmp_path, capsys):
    data = tmp_path / "cfg"
    data.mkdir()
    for i in range(12):
        (data / f"f{i}.yaml").write_text(f"value: {i}\n" * (i + 1))
    repo = tmp_path / "repo"
    plan = write_plan(tmp_path / "plan.yaml", local_target(repo), files_source("config", [str(data)]))
    assert main(["backup", "--plan", plan, "-q"]) == Exit.OK
    catalog = Repository(LocalStore(str(repo))).find_snapshot("latest").catalog
    blob = max((p for p in (repo / "blobs").rglob("*") if p.is_file() and p.name != catalog),
               key=lambda p: p.stat().st_size)  # one file's only chunk
    blob.write_bytes(b"X" + blob.read_bytes()[1:])
    capsys.readouterr()
    read, codes = [], []
    for part in range(1, 8):
        codes.append(main(["verify", "--plan", plan, "--read-data-subset", f"{part}/7", "--json"]))
        document = json.loads(capsys.readouterr().out)
        assert document["read_data_subset"] == f"{part}/7"
        read.append(document["blobs_checked"])
    holding = int(blob.name[:8], 16) % 7 + 1
    assert codes == [Exit.INTEGRITY if part == holding else Exit.OK for part in range(1, 8)]
    stored = sum(1 for p in (repo / "blobs").rglob("*") if p.is_file())
    assert sum(read) == stored  # single-chunk files: each blob read on exactly one day


def test_read_data_and_a_subset_together_are_a_usage_error(tmp_path, capsys):
    plan = write_plan(tmp_path / "plan.yaml", local_target(tmp_path / "repo"),
                      files_source("config", [os.fspath(tmp_path)]))
    assert main(["verify", "--plan", plan, "--read-data", "--read-data-subset", "1/7"]) == Exit.USAGE
    assert "give one" in capsys.readouterr().err
