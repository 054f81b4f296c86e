"""dr audit --identity names sealed lines again (dr.audit.revealing, docs/format.md 8.1)."""

from __future__ import annotations

import json

import pyrage

from dr.audit.revealing import Revealer
from dr.repository import encryption, names

NAME, ALIAS = "team<a>/db|root&pw", "alias/customer-x"


def _sealed_record(recipient: str) -> tuple[dict, str, str]:
    """A stored secret line (identity keyed, meta sealed) and the digests a report would show."""
    sealer = names.Sealer([recipient], [pyrage.x25519.Recipient.from_str(recipient)])
    stored = sealer.identity("secretsmanager-secret", NAME)
    meta = sealer.seal(NAME, {names.SEALED_NAMES: [NAME, ALIAS], "arn": "arn:..."}, None)
    return {"source": "sm", "kind": "secretsmanager-secret", "identity": stored, "meta": meta}, stored, \
        sealer.name(ALIAS)


def test_each_digest_learnt_is_replaced_escaped_for_its_format():
    identity, recipient = encryption.generate_identity()
    record, stored, alias_digest = _sealed_record(recipient)
    revealer = Revealer([pyrage.x25519.Identity.from_str(identity)], names.plan_name_key([recipient]))
    assert list(revealer.record([record, {"source": "x", "identity": "plain", "meta": {}}]))[0] is record
    unknown = names.PREFIX + "0" * 64
    text = f"sm/{stored} needs https://kms.us-east-1.amazonaws.com/{alias_digest} and {unknown}"
    assert revealer.reveal(text, "md") == (f"sm/team<a>/db\\|root&pw needs https://kms.us-east-1.amazonaws.com/"
                                           f"{ALIAS} and {unknown}")
    assert "sm/team&lt;a&gt;/db|root&amp;pw" in revealer.reveal(text, "html")
    document = revealer.reveal(json.dumps({"m": text}), "json")
    assert json.loads(document)["m"].startswith(f"sm/{NAME} needs") and revealer.unopened == 0


def test_a_line_sealed_to_other_recipients_stays_a_digest_and_is_counted():
    _, recipient = encryption.generate_identity()
    record, stored, _ = _sealed_record(recipient)
    other, _ = encryption.generate_identity()
    revealer = Revealer([pyrage.x25519.Identity.from_str(other)], names.plan_name_key([recipient]))
    list(revealer.record([record]))
    assert revealer.reveal(f"sm/{stored}", "md") == f"sm/{stored}" and revealer.unopened == 1
