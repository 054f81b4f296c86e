"""Test kits dr ships for plugin authors: the exporter conformance suite (docs/exporters.md).

Where it sits: above backup, restore and audit, beside drills. The suite drives an exporter the
way `dr backup`, `dr restore --source` and `dr audit --live` do, so it imports them; nothing in
dr imports it back. It imports no test framework: checks raise AssertionError.
"""

from dr.testing.exporter_conformance import (CHECKS, ConformanceFixture, ConformanceWarning, ExporterConformance,
                                          NotChecked, verify_exporter)

__all__ = ["CHECKS", "ConformanceFixture", "ConformanceWarning", "ExporterConformance", "NotChecked", "verify_exporter"]
