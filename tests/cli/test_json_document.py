"""The --json document is written in pieces of whole lines, each redacted (dr/cli/output.py):
the same text, byte for byte, as the whole document encoded and redacted at once, however large."""

from __future__ import annotations

import json

from dr.cli import output
from dr.model.redaction import redact


def _whole(data: dict) -> str:
    return redact(json.dumps(data, indent=2, sort_keys=True, default=str)) + "\n"


def test_a_large_document_in_pieces_is_the_whole_document_redacted():
    items = [{"item": f"ml/data/d{i // 1000:03d}/f{i:06d}", "status": "restored", "reason": "written"}
             for i in range(20_000)]
    secrets = {"url": "https://user:hunter2@registry.example/v2", "key": "AGE-SECRET-KEY-1" + "Q" * 58}
    data = {"outcomes": items[:10_000] + [secrets] + items[10_000:], "when": object()}
    pieces = list(output._json_pieces(data))
    assert len(pieces) > 10, "one piece: nothing was streamed"
    assert all(p.endswith("\n") for p in pieces)
    text = "".join(pieces)
    assert text == _whole(data)
    assert "hunter2" not in text and "QQQQ" not in text


def test_a_small_document_is_one_piece():
    assert list(output._json_pieces({"a": 1})) == [_whole({"a": 1})]
