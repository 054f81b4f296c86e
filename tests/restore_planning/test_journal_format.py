"""docs/format.md sections 4.1 and 4.2 name every field dr writes in journals and drill records.

The records' keys and codecs are dr.repository.journals and dr.repository.drill_records; what
they write is checked here through the CLI, what they require of a reader directly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dr.repository import drill_records, journals

DOC = Path(__file__).resolve().parents[2] / "docs" / "format.md"


def _section(title: str) -> str:
    text = DOC.read_text()
    match = re.search(rf"^### {re.escape(title)}\n.*?(?=^##)", text, re.M | re.S)
    assert match, f"docs/format.md has no section '### {title}'"
    return match.group(0)


def _documented(cell: str) -> set[str]:
    names = set()
    for token in re.findall(r"`([^`]+)`", cell):
        names |= set(re.findall(r"[a-z_]+", token))
    return names


def _rows(section: str) -> dict[str, str]:
    found = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z]+)` \| [^|]+ \| (.+) \|$", section, re.M)}
    found.pop("record", None)  # the table's header row
    return found


def test_every_journal_field_is_documented(backed_up):
    w = backed_up
    assert w.dr(*w.restore_args("--to", f"config={w.root / 'out'}", "-q")) == 4  # infra refused (blocker), the rest succeeded
    section = _section("4.1 Restore journals")
    common = _documented(section.split("| `record` | Written |")[0])
    rows = _rows(section)
    records = [json.loads(p.read_text()) for p in w.journal_files()]
    assert {r["record"] for r in records} == {"plan", "run", "step", "end"} == set(rows)
    for record in records:
        documented = common | _documented(rows[record["record"]])
        assert set(record) <= documented, (record["record"], set(record) - documented)
        if record["record"] == "plan":
            for step in record["steps"]:
                assert set(step) <= documented
    name = re.compile(r"^(\d{6})-([a-z0-9._-]+)\.json$")
    for path in w.journal_files():
        seq, _ = name.match(path.name).groups()
        assert int(seq) == json.loads(path.read_text())["seq"]
        assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", path.parent.name)


def test_every_drill_field_is_documented(backed_up, capsys):
    w = backed_up
    assert w.dr("drill", "--plan", w.plan, "--failed", "cluster-a", "--to", str(w.root / "s"), "-q") == 0
    [path] = list((w.repo_path / "drills").iterdir())
    record = json.loads(path.read_text())
    documented = _documented(_section("4.2 Drill history"))
    assert set(record) <= documented, set(record) - documented
    for part in ("rto", "audit", "restore", "verify", "snapshot"):
        assert set(record[part]) <= documented, (part, set(record[part]) - documented)
    assert path.name == f"{record['id']}.json"


def test_what_the_readers_require_is_documented():
    journal, drill = _section("4.1 Restore journals"), _section("4.2 Drill history")
    assert f'`"{journals.FORMAT}"`, `{journals.VERSION}`' in journal
    assert f'`"{drill_records.FORMAT}"`, `{drill_records.VERSION}`' in drill
    rows = _rows(journal)
    for kind, members in journals.REQUIRED.items():
        assert set(members) <= _documented(rows[kind]), kind
    for path in drill_records.REQUIRED:
        assert set(path.split(".")) <= _documented(drill), path
