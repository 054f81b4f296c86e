"""A simulated day for a Kubelet: quarter-hour ticks on a fixed real cadence, Prometheus watching.

Time compression: a simulated quarter-hour lasts `tick_seconds` of wall-clock time, and ticks
start on that cadence whatever the jobs take (a Job that outlasts its tick keeps running, as a
real one does; Forbid skips its next start). dr and Prometheus both read the wall clock, so the
things that are durations are scaled by the same factor (`SCALE = 900 / tick_seconds`): the
plan's RPO objectives are written in compressed seconds, and `scaled_rules` divides every
duration in the rendered alert rules (range windows, `for:`, second constants, the schedule
interval dr publishes) by it. Schedules stay as rendered: the controller matches them against the
simulated time, so the same cron lines decide which Jobs start together."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import yaml

from tests.harness.kubelet import Kubelet
from tests.metrics.conftest import LOOPBACK, Prometheus

QUARTER = timedelta(minutes=15)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _seconds(n: str, unit: str, scale: float) -> str:
    return f"{max(1, round(int(n) * _UNITS[unit] / scale))}s"


def _scaled_expr(expr: str, scale: float) -> str:
    expr = re.sub(r"\[(\d+)([smhdw])\]", lambda m: f"[{_seconds(m[1], m[2], scale)}]", expr)
    expr = re.sub(r"(?<![\w.\[])(\d{3,})(?![\w.])", lambda m: f"{int(m[1]) / scale:g}", expr)
    return expr.replace("dr_backup_schedule_interval_seconds", f"(dr_backup_schedule_interval_seconds / {scale:g})")


def scaled_rules(prometheus_rule: dict, scale: float) -> dict:
    """The PrometheusRule's groups as a plain rules file, every duration divided by `scale`."""
    groups = prometheus_rule["spec"]["groups"]
    for rule in (r for g in groups for r in g["rules"]):
        rule["expr"] = _scaled_expr(rule["expr"], scale)
        if "for" in rule:
            rule["for"] = _seconds(rule["for"][:-1], rule["for"][-1], scale)
    return {"groups": groups}


class RulesPrometheus(Prometheus):
    """tests.metrics' Prometheus (1 s scrape and evaluation of the Pushgateway) with a rules file."""

    def __init__(self, gateway_port: int, rules: dict):
        super().__init__(gateway_port)
        path = f"{self.folder}/rules.yaml"
        with open(path, "w", encoding="utf-8") as handle:
            yaml.safe_dump(rules, handle, sort_keys=False)
        with open(f"{self.folder}/prometheus.yml", "a", encoding="utf-8") as handle:
            handle.write(f"rule_files: ['{path}']\n")

    def query_rules(self) -> list[dict]:
        """The rules Prometheus loaded, each with its health and last error."""
        with LOOPBACK.open(f"http://127.0.0.1:{self.port}/api/v1/rules", timeout=5) as response:
            return [r for g in json.load(response)["data"]["groups"] for r in g["rules"]]

    def firing(self) -> set[tuple[str, str]]:
        """(alert, what it is about: source, command or target) for each firing alert."""
        found = set()
        for labels in self.values('ALERTS{alertstate="firing"}'):
            named = dict(labels)
            about = named.get("source") or named.get("command") or named.get("target") or ""
            found.add((named["alertname"], about))
        return found


@dataclass
class Day:
    kubelet: Kubelet
    prometheus: RulesPrometheus
    tick_seconds: float
    start: datetime  # the simulated midnight
    ticks: int = 96
    hooks: dict = field(default_factory=dict)  # {tick: callable(day)} run before the tick's starts
    alerts: dict = field(default_factory=dict)  # {(alert, about): [ticks it fired at]}

    def at(self, tick: int) -> datetime:
        return self.start + tick * QUARTER

    def run(self) -> None:
        began = time.monotonic()
        for tick in range(self.ticks):
            time.sleep(max(0.0, began + tick * self.tick_seconds - time.monotonic()))
            self.kubelet.reap()
            if tick in self.hooks:
                self.hooks[tick](self)
            for name in self.kubelet.due(self.at(tick)):
                self.kubelet.start(name, tick)
            for seen in self.prometheus.firing():
                self.alerts.setdefault(seen, []).append(tick)
        self.kubelet.reap(wait=True)

    def table(self) -> str:
        return day_table(self.kubelet.tally, self.alerts)


def day_table(tally: dict, alerts: dict) -> str:
    """The day: a line per CronJob (Jobs started, starts skipped, failures, mean run time), then
    each alert seen with the ticks it was firing at."""
    lines = [f"{'job':<24} {'ran':>4} {'skipped':>7} {'failed':>6} {'mean s':>6}"]
    for name, counted in sorted(tally.items()):
        mean = counted.seconds / counted.started if counted.started else 0.0
        lines.append(f"{name:<24} {counted.started:>4} {counted.skipped:>7} {len(counted.failed):>6} {mean:>6.1f}")
    for name, counted in sorted(tally.items()):
        lines += [f"  {name} failed at tick {failure}" for failure in counted.failed[:5]]
    lines.append(f"{'alert seen':<40} firing at ticks")
    for (alert, about), ticks in sorted(alerts.items()):
        lines.append(f"{alert + ' [' + about + ']':<40} {_spans(ticks)}")
    if not alerts:
        lines.append("(none)")
    return "\n".join(lines)


def _spans(ticks: list[int]) -> str:
    """[3, 4, 5, 9] as '3-5, 9' (tick 4 is 01:00)."""
    spans: list[list[int]] = []
    for tick in ticks:
        if spans and tick == spans[-1][1] + 1:
            spans[-1][1] = tick
        else:
            spans.append([tick, tick])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in spans)
