"""--metrics-file and --pushgateway, shared by the commands that publish metrics (docs/metrics.md).

Metrics never change a command's outcome: a file that cannot be written or a gateway that does
not answer is a warning line naming it (shown under --quiet too: cron runs quiet), and the exit
code is the command's own. prometheus_client
and dr.metrics are imported only when one of the options is given.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from dr.cli.output import Output


def metrics_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metrics-file", metavar="PATH",
                   help="write this run's metrics in the node-exporter textfile format (atomically; "
                        "name it *.prom in the collector's directory, one file per command)")
    p.add_argument("--pushgateway", metavar="URL",
                   help="push this run's metrics to a Prometheus Pushgateway (job dr, grouped by plan and "
                        "source; basic auth as http://USER:PASSWORD@HOST:PORT, or http://USER@HOST:PORT with "
                        "the password in DR_PUSHGATEWAY_PASSWORD); a failed push is a warning, not a failed run")


def wanted(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "metrics_file", None) or getattr(args, "pushgateway", None))


def publish(args: argparse.Namespace, out: Output, build: Callable[[float], list]) -> None:
    """build(now) makes the samples; it runs only when metrics are asked for."""
    if not wanted(args):
        return
    from dr.metrics import publishing

    samples = build(time.time())
    if args.metrics_file:
        try:
            publishing.write_textfile(args.metrics_file, samples)
        except (OSError, ValueError) as exc:  # ValueError: a previous file that is not metrics
            out.warn(f"metrics not written to {args.metrics_file}: {exc}; fix the path or remove the file")
    if args.pushgateway:
        problems = publishing.push(args.pushgateway, samples)
        if problems:
            out.warn(f"metrics not pushed to {args.pushgateway} ({len(problems)} of "
                     f"{len({publishing.grouping_key(s) for s in samples})} groups): {'; '.join(problems)}")
