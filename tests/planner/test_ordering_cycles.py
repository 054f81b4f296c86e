"""The whole-plan restore's cycle policy (dr.model.levelling) seen from a restore plan."""

from __future__ import annotations

from tests.planner.test_ordering import _artifact, _levels, _restore


def test_what_needs_a_cycle_waits_for_it_and_what_does_not_goes_first():
    artifacts = [
        _artifact("a", "files", "file", "a", [("secret", "secret:x/b")], provides=["secret:x/a"]),
        _artifact("b", "files", "file", "b", [("secret", "secret:x/a")], provides=["secret:x/b"]),
        _artifact("c", "files", "file", "c"),
        _artifact("d", "files", "file", "d", [("secret", "secret:x/a")]),
    ]
    rp = _restore([("a", "files"), ("b", "files"), ("c", "files"), ("d", "files")], artifacts)
    # Before, d shared the cycle's level and ran beside the step it needs.
    assert _levels(rp) == [["c"], ["a", "b"], ["d"]]
    assert rp.step("a").after["(cycle)"] == "its dependencies form a cycle with b; restored together"
    assert "(cycle)" not in rp.step("d").after and set(rp.step("d").after) == {"a"}
