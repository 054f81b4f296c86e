"""Infrastructure the repository and the exporters share, at the bottom of dr (issue 32, item 1).

Nothing here knows a store, an exporter or a plan: retrying (one retry policy and the one base
of every error worth retrying). Every layer may import it; it imports nothing of dr.
"""
