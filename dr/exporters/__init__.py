"""Exporters: one plugin module or package per kind of thing dr protects.

Everything directly under dr.exporters is an exporter, and none imports another
(.importlinter, by wildcard). The contract they implement is dr.contract (documented in
docs/exporters.md; a test keeps the two in step), found through the `dr.exporters` entry-point
group by dr.contract.registry: the built-ins are registered there exactly like third-party
plugins. What several exporters share is in the kit, dr.kits.
"""
