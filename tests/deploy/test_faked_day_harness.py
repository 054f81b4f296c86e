"""The faked day's own parts, fast: the series a Recorder hands promtool, and the alerts read back
from a real `promtool test rules` run (its eval times past a day print as '1d2h', which the
whole-day tests meet only after 24 hours)."""

from __future__ import annotations

from tests.harness.faked_day import Recorder, firing_by_tick

RULES = {"groups": [{"name": "t", "rules": [
    {"alert": "Down", "expr": "dr_backup_success == 0", "labels": {"severity": "critical"}}]}]}


def test_the_recorded_states_become_one_sample_a_minute():
    recorder = Recorder("unused")
    recorder.states = [(3, {"a": 1.0}), (18, {}), (33, {"a": 2.0})]
    assert recorder._values("a", 40) == ["_x3", "1.0+0x14", "_x15", "2.0+0x6"]  # 3 + 15 + 15 + 7 minutes


def test_promtool_reports_the_alert_at_the_ticks_it_fires(tmp_path):
    series = 'dr_backup_success{source="code"}'
    recorder = Recorder("unused")
    recorder.states = [(0, {series: 1.0}), (1500, {series: 0.0}), (1560, {series: 1.0})]
    checks = {0: 14, 1: 1514, 2: 1574}  # the second check is at 1d1h14m
    assert firing_by_tick(RULES, recorder.input_series(1600), checks, str(tmp_path)) == {("Down", "code"): [1]}
