"""The planner: a snapshot's sources as one restore plan, judged, ordered and decided, read-only.

Where it sits: under the jobs that need a plan (dr.restore executes it, dr drill runs it into
scratch, dr.testing's conformance suite and `dr audit` ask the same exporters the same
questions), over the exporters, which it reaches only through dr.contract and its registry.
It reads the plan, the catalog and blob names, never a destination, so a dry run is safe
anywhere. Its answer is the same as the audit's: both judge with dr.model.recovery.

planning        plan_restore(): the RestorePlan, each step refused, held or ready
steps           a step per source, its needs and destination units; rule selectors
needs           what each step needs in the scenario (ok, remapped, blocker, unknown)
destinations    where each step writes, and the remaps its exporter hears
remaps          which plan remaps a step's restore applies, and to what
ordering        one dependency graph across exporters, cut into levels (dr.model.levelling,
                which stays in the model: the kubernetes exporter cuts its own graph with it)
ordering_rules  the core's ordering rules, as data with reasons
estimating      the plan's RTO estimate, part by part
"""
