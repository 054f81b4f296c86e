"""The verdict engine: what a recovery needs, judged against a failure scenario.

Where it sits: in the model, below everything, because every job that asks "can we recover?"
must get the same answer, and backup, restore and audit may not import one another. The audit
(dr.audit: findings for each scenario), restore planning (dr.restore: may this step run?) and
so drills (an audit and a restore plan over the same snapshot) all judge through it; nothing
else decides a verdict.

  verdicts     the Verdict enum (ok, remapped, blocker, unknown), its severity, worst();
  scenarios    Scenario: the failed domains, every domain lost with them, a label, and the
               locations lost alone (kind:KIND, location:NAME); UnknownDomain for a name
               the plan does not have;
  copies       what the snapshot's artifacts provide (meta['provides']) and normalize();
  judging      Placements (cached), Evidence (placements and intact copies, the same in every
               scenario) and RecoveryJudge (one scenario);
  essentials   the targets, their credentials, the private key and dr's image, judged alike;
  alternatives needs met by any one of several references (an exporter's AnyOf), judged alike;
  services     what lies behind a backed-up Service (state or stateless backends), which
               decides whether the snapshot's copy of it brings it back;
  circular     the credentials and key only the snapshot holds (the audit's credentials-circular,
               a restore's blocker need), judged alike.

The rules (written out for operators in dr.audit's module docstring; this code is that text):
  lost      a domain is lost when it, or any domain it is nested in, failed; a reference is
            lost when its domain is, or the location that placed it failed alone;
  ok        the reference is placed (plan.placer) in a domain that is not lost; or it is
            placed nowhere but COVERED: the snapshot brings it back itself;
  remapped  placed in a lost domain but COVERED: the restore rebuilds it from the copy;
  blocker   placed in a lost domain and not covered;
  unknown   placed nowhere and not covered.
COVERED: some artifact of the snapshot lists the reference in meta['provides'] (a string or
a list of strings), compared after normalize(); every blob of that artifact is still stored;
and the copies survive: the target holding the snapshot is not lost and neither are the
credentials that reach it (targets[].credentials_location). A dependency's own artifact may
provide it. Essentials are never covered: ok, blocker, or unknown when nothing places them.
"""

from dr.model.recovery.alternatives import AnyJudgement, judge_any
from dr.model.recovery.copies import Copy, artifact_name, copies_of, normalize, provided_by, provided_in
from dr.model.recovery.essentials import (CREDENTIALS, DR_IMAGE, KEY, TARGET, Essential, EssentialVerdicts,
                                          essentials, judge_essentials)
from dr.model.recovery.judging import Evidence, Judgement, Placements, RecoveryJudge
from dr.model.recovery.scenarios import (Scenario, UnknownDomain, UnknownLoss, is_location_loss, is_lost,
                                         location_kinds, lost_domains, placement_lost, scenario)
from dr.model.recovery.services import FACT_KINDS, service_facts
from dr.model.recovery.verdicts import BLOCKED, OK, REMAPPED, SEVERITY, UNKNOWN, VERDICTS, Verdict, worst

__all__ = ["AnyJudgement", "BLOCKED", "CREDENTIALS", "Copy", "DR_IMAGE", "Essential", "EssentialVerdicts", "Evidence", "FACT_KINDS", "Judgement",
           "KEY", "OK", "Placements", "REMAPPED", "RecoveryJudge", "SEVERITY", "Scenario", "TARGET", "UNKNOWN",
           "UnknownDomain", "UnknownLoss", "VERDICTS", "Verdict", "artifact_name", "copies_of", "essentials", "is_location_loss", "is_lost", "location_kinds",
           "judge_any", "judge_essentials", "lost_domains", "normalize", "placement_lost", "provided_by", "provided_in", "scenario", "service_facts", "worst"]
