"""dr: backup and disaster recovery for AI platforms on Kubernetes.

Layers, bottom to top (enforced by .importlinter):
  dr.model       plans, failure domains, locations, artifacts, dependencies, snapshots
  dr.repository  the backup repository: format, stores, encryption, locks
  dr.exporters   one plugin module per kind of thing protected
  dr.backup | dr.restore | dr.audit   the three jobs, independent of one another
  dr.cli         the command line
"""

__version__ = "0.1.0"
