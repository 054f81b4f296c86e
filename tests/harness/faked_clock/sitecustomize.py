"""The clock of a simulated day's Job (tests/harness/faked_day.py): every Python process started
with this folder on PYTHONPATH imports this module at start-up (site's sitecustomize hook), and
with FAKED_CLOCK_START set its wall clock starts at that many seconds since the epoch and runs
on from there (time-machine: time.time, datetime.now; the monotonic clock is left alone)."""

import os

if os.environ.get("FAKED_CLOCK_START"):
    import time_machine

    time_machine.travel(float(os.environ["FAKED_CLOCK_START"]), tick=True).start()
