"""`python -m dr`: the same entry point as the `dr` console script (dr.cli.main)."""

from dr.cli.main import entry

entry()
