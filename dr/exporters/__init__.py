"""Exporters: one plugin module per kind of thing dr protects.

The contract every exporter implements is in contract.py and documented in docs/exporters.md
(a test keeps the two in step). Exporters are found through the `dr.exporters` entry-point
group; the built-ins are registered there exactly like third-party plugins (registry.py).
"""
