"""A whole simulated day on a faked clock, its alerts found by Prometheus's own rule engine.

Why not the wall clock (tests/harness/day.py): with time compressed, how long a Job takes counts
against the day, so on a loaded 2-core machine a Job outlasted its tick and the staleness alerts
fired because the machine was slow, and every duration (RPOs, rule windows, `for:`) had to be
scaled. Here nothing is scaled:

- each Job's process gets its tick's time (tests/harness/faked_clock/sitecustomize.py, with
  time-machine; from there its wall clock runs at the normal rate), so dr stamps its snapshots,
  measures RPOs and publishes its timestamps in simulated time, with the plan and the rendered
  rules exactly as written (the processes dr starts, git, keep the real clock: dr reads no time
  from them);
- the Jobs due at a tick start together and the next tick comes when they have all ended (a Job
  takes seconds, far less than its quarter-hour, so concurrencyPolicy Forbid never has to act);
- after each tick the real Pushgateway's groups are read (`Recorder`) and held until the next
  tick, as a one-minute scrape of the gateway sees them;
- after the day, `promtool test rules` evaluates the rendered rules every minute over those series
  and reports which alerts fire at each tick (`firing_by_tick`). promtool's `time()` is 0 at its
  start, so its start is put a day before the simulated midnight and every timestamp metric is
  read relative to it (`on_promtool_clock`): each rule compares exactly what it would live.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.day import day_table
from tests.harness.kubelet import Kubelet

# The simulated day is the day after tomorrow: ahead of the real clock (by a day at least), so that a deadline a client
# library computes from the faked wall clock and hands to code on the real one (gRPC's) lies in
# the future, and TLS certificates (checked on the real clock) are valid.
MIDNIGHT = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=2)
EPOCH = MIDNIGHT - timedelta(days=1)  # promtool's time 0
QUARTER = timedelta(minutes=15)
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback, never a proxy


FAKED_CLOCK = os.path.join(os.path.dirname(__file__), "faked_clock")  # its sitecustomize.py


@functools.cache
def _time_machine_only() -> str:
    """A folder that holds time-machine and nothing else: the Jobs run from the image's bare
    install, which lacks it, and must not see the rest of the test venv."""
    import _time_machine
    import time_machine

    folder = tempfile.mkdtemp(prefix="dr-faked-clock-")
    os.chmod(folder, 0o755)
    atexit.register(shutil.rmtree, folder, True)
    for module in (os.path.dirname(time_machine.__file__), _time_machine.__file__):
        os.symlink(module, os.path.join(folder, os.path.basename(module)))
    return folder


def faked_clock(when: datetime) -> dict[str, str]:
    """The environment that starts a Python process's wall clock at `when`."""
    return {"PYTHONPATH": FAKED_CLOCK + os.pathsep + _time_machine_only(),
            "FAKED_CLOCK_START": repr(when.timestamp()), "TZ": "UTC"}


def minute(when: datetime) -> int:
    """Minutes since promtool's time 0."""
    return int((when - EPOCH).total_seconds() // 60)


def on_promtool_clock(name: str, value: float) -> float:
    """A timestamp metric's value in promtool's time (where `time()` starts at 0 at EPOCH)."""
    return value - EPOCH.timestamp() if name.endswith("_timestamp_seconds") else value


@dataclass
class Recorder:
    """What the Pushgateway holds after each tick: {series: value} from a minute on."""

    gateway: str  # http://127.0.0.1:PORT
    states: list[tuple[int, dict[str, float]]] = field(default_factory=list)

    def record(self, when: datetime) -> None:
        with _OPENER.open(f"{self.gateway}/metrics", timeout=10) as response:
            text = response.read().decode()
        state = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name.startswith("dr_"):
                    state[_series(sample.name, sample.labels)] = on_promtool_clock(sample.name, sample.value)
        # held from the minute after the tick's start (its Jobs take seconds; they have ended)
        self.states.append((minute(when) + 1, state))

    def wipe(self) -> None:
        """Delete every group, as a Pushgateway restarted without persistence has none."""
        request = urllib.request.Request(f"{self.gateway}/api/v1/admin/wipe", method="PUT")
        with _OPENER.open(request, timeout=10):
            pass

    def input_series(self, end: int) -> list[dict]:
        """promtool's input_series, one sample a minute from 0 to `end` ('_': none)."""
        names = sorted({name for _, state in self.states for name in state})
        return [{"series": name, "values": " ".join(self._values(name, end))} for name in names]

    def _values(self, name: str, end: int) -> list[str]:
        starts = [start for start, _ in self.states]  # ticks are 15 minutes apart: increasing
        runs = [f"_x{starts[0]}"] if starts[0] > 0 else []
        for (start, state), stop in zip(self.states, starts[1:] + [end]):
            value = state.get(name)
            runs.append(f"_x{stop - start}" if value is None else f"{_number(value)}+0x{stop - start - 1}")
        return runs


def _number(value: float) -> str:
    return "NaN" if value != value else repr(value)


def _series(name: str, labels: dict[str, str]) -> str:
    pairs = ",".join(f'{k}="{_escaped(v)}"' for k, v in sorted(labels.items()) if v != "")
    return f"{name}{{{pairs}}}"


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def firing_by_tick(rules: dict, series: list[dict], checks: dict[int, int], work: str) -> dict[tuple[str, str], list[int]]:
    """{(alert, what it is about): [ticks]}: the alerts promtool finds firing at each check
    ({tick: minute}), the rules evaluated every minute over the recorded series."""
    with tempfile.NamedTemporaryFile("w", suffix=".rules.yaml", dir=work, delete=False) as handle:
        yaml.safe_dump(rules, handle, sort_keys=False)
    tests = {"rule_files": [handle.name], "evaluation_interval": "1m",
             "tests": [{"interval": "1m", "input_series": series,
                        "promql_expr_test": [{"expr": 'ALERTS{alertstate="firing"}', "eval_time": f"{m}m",
                                              "exp_samples": []} for m in checks.values()]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".test.yaml", dir=work, delete=False) as handle:
        yaml.safe_dump(tests, handle, sort_keys=False)
    done = subprocess.run(["promtool", "test", "rules", handle.name], capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    if done.returncode == 0:
        return {}
    tick_at = {m: tick for tick, m in checks.items()}
    blocks = re.split(r'\n\s*expr: "ALERTS', output)[1:]
    assert blocks, f"promtool failed without a result:\n{output[-3000:]}"
    found: dict[tuple[str, str], list[int]] = {}
    for block in blocks:
        tick = tick_at[_minutes(re.search(r"time: (\w+),", block)[1])]
        for labels in re.findall(r"\{([^}]*)\}", block.split("got:", 1)[1]):
            named = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', labels))
            about = named.get("source") or named.get("command") or named.get("target") or ""
            found.setdefault((named["alertname"], about), []).append(tick)
    return found


_UNITS = {"w": 7 * 1440, "d": 1440, "h": 60, "m": 1}


def _minutes(duration: str) -> int:
    """promtool's eval time ('2d18h40m', Prometheus's duration format) in minutes."""
    parts = re.findall(r"(\d+)([wdhm])", duration)
    assert "".join(n + u for n, u in parts) == duration, duration
    return sum(int(n) * _UNITS[u] for n, u in parts)


@dataclass
class FakedDay:
    kubelet: Kubelet
    recorder: Recorder
    ticks: int = 96
    hooks: dict = field(default_factory=dict)  # {tick: callable(day)} run before the tick's starts
    quiet_after: int | None = None  # from this tick on no Job starts (the deployment is gone)
    alerts: dict = field(default_factory=dict)  # {(alert, about): [ticks it fired at]}

    @staticmethod
    def at(tick: int) -> datetime:
        return MIDNIGHT + tick * QUARTER

    def run(self) -> None:
        for tick in range(self.ticks):
            if tick in self.hooks:
                self.hooks[tick](self)
            if self.quiet_after is None or tick < self.quiet_after:
                for name in self.kubelet.due(self.at(tick)):
                    self.kubelet.start(name, tick, faked_clock(self.at(tick)))
                self.kubelet.reap(wait=True)
            self.recorder.record(self.at(tick))

    def evaluate(self, rules: dict, work: str) -> None:
        """The alerts firing at the end of each tick (a minute before the next one starts)."""
        checks = {tick: minute(self.at(tick)) + 14 for tick in range(self.ticks)}
        end = minute(self.at(self.ticks))
        self.alerts = firing_by_tick(rules, self.recorder.input_series(end), checks, work)

    def table(self) -> str:
        return day_table(self.kubelet.tally, self.alerts)
