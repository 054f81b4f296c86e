"""dr's metrics: what a backup, status, audit, drill or verify run measured, as Prometheus gauges.

Where it sits: beside dr.drills and dr.testing, above the jobs, below the CLI. It reads the
documents the commands print with --json (plain dicts, so it imports none of the jobs), turns
them into samples (dr.metrics.samples, names and labels from dr.metrics.catalog, documented in
docs/metrics.md), and publishes them with the Prometheus client library into a fresh registry
per run (dr.metrics.publishing): a node-exporter textfile, or a push to a Pushgateway.
The CLI imports it only when --metrics-file or --pushgateway is given.
"""

from dr.metrics.catalog import METRICS, Metric
from dr.metrics.samples import Sample

__all__ = ["METRICS", "Metric", "Sample"]
