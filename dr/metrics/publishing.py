"""Publishing samples with the Prometheus client library, from a fresh registry per run.

- write_textfile(): the node-exporter textfile format, written to a temporary name and renamed
  (prometheus_client's write_to_textfile), so the collector never reads half a file. The file
  holds one run, but a backup's last-success and last-failure timestamps of the series this run
  did not set are carried over from the previous file: a failed run must not erase when the
  source last succeeded.
- push(): to a Pushgateway, one group per plan and source (job "dr"), with POST semantics
  (pushadd): a push replaces only the metrics it carries, so a failed backup's push leaves the
  source's last success in place, and dr status's push leaves dr backup's.
"""

from __future__ import annotations

import os
from functools import partial
from urllib.parse import urlsplit, urlunsplit

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile
from prometheus_client.exposition import basic_auth_handler, default_handler, pushadd_to_gateway
from prometheus_client.parser import text_string_to_metric_families

from dr.metrics.catalog import METRICS
from dr.metrics.samples import Sample

JOB = "dr"
GROUPING = ("plan", "source")
CARRIED = ("dr_backup_last_success_timestamp_seconds", "dr_backup_last_failure_timestamp_seconds")
PUSH_TIMEOUT = 10.0  # seconds; a gateway that does not answer must not hold a CronJob


def registry_of(samples: list[Sample]) -> CollectorRegistry:
    """A fresh registry holding exactly these samples (no process-wide state)."""
    registry = CollectorRegistry()
    gauges: dict[str, Gauge] = {}
    for sample in samples:
        if sample.name not in gauges:
            metric = METRICS[sample.name]
            gauges[sample.name] = Gauge(metric.name, metric.help, metric.labels, registry=registry)
        gauges[sample.name].labels(*(value for _, value in sample.labels)).set(sample.value)
    return registry


def write_textfile(path: str, samples: list[Sample]) -> None:
    write_to_textfile(path, registry_of(samples + carried_over(path, samples)))


def carried_over(path: str, samples: list[Sample]) -> list[Sample]:
    """The previous file's CARRIED samples whose series this run does not set."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return []
    now = {(s.name, s.labels) for s in samples}
    kept = []
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name in CARRIED and set(found.labels) == set(METRICS[found.name].labels):
                sample = Sample.of(found.name, found.value, **found.labels)
                if (sample.name, sample.labels) not in now:
                    kept.append(sample)
    return kept


def grouping_key(sample: Sample) -> tuple[tuple[str, str], ...]:
    return tuple((key, value) for key, value in sample.labels if key in GROUPING)


def push(url: str, samples: list[Sample], timeout: float = PUSH_TIMEOUT) -> list[str]:
    """Push every group; return one problem per group that failed (nothing raised)."""
    gateway, handler = _gateway(url)
    groups: dict[tuple, list[Sample]] = {}
    for sample in samples:
        groups.setdefault(grouping_key(sample), []).append(sample)
    problems = []
    for key, group in groups.items():
        try:
            pushadd_to_gateway(gateway, job=JOB, registry=registry_of(group), grouping_key=dict(key),
                               timeout=timeout, handler=handler)
        except (OSError, ValueError) as exc:  # URLError, HTTP errors and timeouts are OSErrors
            where = ", ".join(f"{k}={v}" for k, v in key)
            problems.append(f"group {where}: {exc}")
    return problems


def _gateway(url: str):
    """The URL without user:password (sent as HTTP basic auth instead, never in a message)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.username:
        return urlunsplit(parts), default_handler
    host = parts.hostname + (f":{parts.port}" if parts.port else "")
    bare = urlunsplit(parts._replace(netloc=host))
    password = parts.password or os.environ.get("DR_PUSHGATEWAY_PASSWORD", "")
    return bare, partial(_basic_auth, username=parts.username, password=password)


def _basic_auth(url, method, timeout, headers, data, *, username: str, password: str):
    return basic_auth_handler(url, method, timeout, headers, data, username=username, password=password)
