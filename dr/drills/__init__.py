"""Drills: prove a recovery works by doing it, and keep what was measured.

Where it sits: above backup, restore and audit (it runs the last two), below the CLI.
  drilling    audit, restore into a scratch target, verify, record (measured RPO, RTO per phase)
  verifying   a second restore pass that must find every item already in place
  history     the append-only drill history in the repository (drills/), and its trend
  history_html  that history as an HTML page: RPO and RTO per phase over time, inline SVG charts
  matrix      one drill per protected scenario, one after another, as one table (and its history)
"""

from dr.drills.drilling import run_drill
from dr.drills.history import read_history, trend

__all__ = ["read_history", "run_drill", "trend"]
