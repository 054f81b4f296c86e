"""Render a plan: gather the needs, build the objects, and say what could not be covered."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import yaml

from dr.deploy import access, egress, objects, scheduling, sizing, tasks
from dr.deploy.gathering import PLAN_DIR, PLAN_PATH, gather
from dr.contract import Credential, RunNeeds
from dr.contract.registry import Registry
from dr.model.plans import Plan

DEFAULT_NAMESPACE = "dr-system"
PUSHGATEWAY_PASSWORD = Credential("pushgateway-password", "the Pushgateway's basic-auth password (leave out "
                                  "without auth)", env="DR_PUSHGATEWAY_PASSWORD", optional=True)
_DR_IMAGE_LINE = re.compile(r"^dr_image:.*$", re.M)


class RenderError(Exception):
    """The plan and the command line do not say enough to render (exit 2); the message says
    which field or option to give."""


@dataclass
class Rendering:
    docs: list[objects.Doc]
    groups: list[scheduling.Group]
    image: str
    namespace: str
    plan_text: str
    left_out: list[str] = field(default_factory=list)  # sources with no schedule
    uncovered: list[str] = field(default_factory=list)  # sources whose exporter says nothing of its needs
    notes: list[str] = field(default_factory=list)
    public_endpoints: list[str] = field(default_factory=list)
    secret_keys: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)
    resources_why: str = ""
    jobs: list[objects.Job] = field(default_factory=list)  # every CronJob, backups first
    pushgateway: str | None = None

    def report(self) -> dict:
        return {"namespace": self.namespace, "image": self.image,
                "objects": [{"kind": d.obj["kind"], "name": d.obj["metadata"]["name"]} for d in self.docs],
                "cronjobs": [{"name": g.name, "schedule": g.schedule, "sources": list(g.sources)} for g in self.groups],
                "maintenance": [{"name": j.name, "schedule": j.schedule, "command": j.command}
                                for j in self.jobs if j.component != "backup"],
                "pushgateway": self.pushgateway,
                "left_out": self.left_out, "uncovered": self.uncovered, "notes": self.notes,
                "public_endpoints": self.public_endpoints, "secret": {"name": objects.SECRET, "keys": self.secret_keys},
                "volume_claims": self.claims, "resources": self.resources_why}


def render(plan: Plan, registry: Registry, plan_text: str, namespace: str = DEFAULT_NAMESPACE,
           image: str | None = None, pushgateway: str | None = None,
           api_server_cidrs: list[str] = ()) -> Rendering:
    image = image or plan.spec.dr_image
    if not image:
        raise RenderError(f"{plan.path}: dr_image is not set and no --image was given: set dr_image in the plan "
                          "(the image restores are pulled from) or pass --image REF")
    groups, left_out = scheduling.groups(plan)
    if not groups:
        raise RenderError(f"{plan.path}: no source has a schedule (sources[].schedule): nothing to run; give "
                          "the sources that the CronJob should back up a 5-field cron schedule")
    gathered = gather(plan, registry)
    if pushgateway:  # every CronJob pushes there: its egress, and its optional password
        gathered.targets.endpoints.append(pushgateway)
        gathered.targets.credentials.append(PUSHGATEWAY_PASSWORD)
    scheduled = [s for g in groups for s in g.sources]
    needs = gathered.covered(scheduled)
    reads = [r for n in needs for r in n.api_reads]
    rbac = access.access(reads)
    grants = _write_grants(gathered, scheduled, namespace)
    token = bool(reads) or bool(grants) or any(n.service_account_token for n in needs)
    net = egress.egress(sorted({e for n in needs for e in n.endpoints}), list(api_server_cidrs))
    text = with_image(plan_text, image) if image != plan.spec.dr_image else plan_text
    metrics = ["--pushgateway", pushgateway] if pushgateway else []
    runs = [(_backup_job(g, metrics), _pod(g.sources, gathered, image, namespace, token)) for g in groups] + \
        [(_task_job(t, metrics), _pod(scheduled if t.task.reads_sources else (), gathered, image, namespace,
                                      token and t.task.reads_sources)) for t in tasks.scheduled(plan)]
    docs = [objects.service_account(namespace, token), objects.plan_configmap(namespace, text),
            *objects.roles(namespace, rbac, access.restore_rules(reads)), *objects.write_roles(grants, namespace),
            objects.network_policy(namespace, net), *(objects.cronjob(job, pod) for job, pod in runs)]
    result = Rendering(docs, groups, image, namespace, text, left_out,
                       [s for s in gathered.uncovered() if s in scheduled],
                       resources_why=sizing.resources([gathered.sizings.get(s) for s in scheduled])[1],
                       jobs=[job for job, _ in runs], pushgateway=pushgateway)
    result.notes = _notes(gathered, scheduled, rbac, net)
    result.public_endpoints = net.public
    result.secret_keys = [{"key": c.key, "what": c.what, "optional": c.optional} for c in objects.credentials(needs)]
    result.claims = [{"name": objects.claim_name(r), "mount": r} for r in objects.data_roots(needs)]
    return result


def _backup_job(group: scheduling.Group, metrics: list[str]) -> objects.Job:
    return objects.Job(group.name, group.schedule, scheduling.command(PLAN_PATH, group) + metrics, "backup", (2, 6),
                       objects.ACTIVE_DEADLINE_SECONDS, [f"Sources {', '.join(group.sources)}: schedule "
                                                         f"{group.schedule!r}."])


def _task_job(job: tasks.Scheduled, metrics: list[str]) -> objects.Job:
    on = f" Target {job.target}." if job.target else ""
    return objects.Job(job.name, job.task.schedule, tasks.command(PLAN_PATH, job) + metrics, job.task.command,
                       job.task.answers, job.task.deadline_seconds,
                       [f"dr {job.task.command}: schedule {job.task.schedule!r}.{on}", job.task.why])


def _write_grants(gathered, scheduled: list[str], namespace: str) -> list[access.Grant]:
    """The namespaced write grants; a wildcard one is refused, naming its source."""
    for name in scheduled:
        try:
            access.writes((gathered.sources[name] or RunNeeds()).api_writes, namespace)
        except access.WildcardWrite as exc:
            raise RenderError(f"source {name} ({gathered.types[name]}): {exc}; its exporter must name what it "
                              "writes") from None
    return access.writes([w for n in gathered.covered(scheduled) for w in n.api_writes], namespace)


def _pod(sources, gathered, image: str, namespace: str, token: bool) -> objects.Pod:
    """Each CronJob's pod gets what its own sources need (and the targets): no more. A task that
    reads no source's copies gets the targets' needs alone, and the repository writer's size."""
    resources, why = sizing.resources([gathered.sizings.get(s) for s in sources])
    return objects.Pod(image, namespace, gathered.covered(list(sources)), resources, why, token)


def with_image(plan_text: str, image: str) -> str:
    """The plan with dr_image set to the rendered image, so the audit judges the image that runs."""
    line = f"dr_image: {image}  # set by dr deploy render --image"
    text = _DR_IMAGE_LINE.sub(lambda _: line, plan_text, count=1) if _DR_IMAGE_LINE.search(plan_text) \
        else plan_text.rstrip("\n") + "\n" + line + "\n"
    if yaml.safe_load(text).get("dr_image") != image:
        raise RenderError("the plan's dr_image could not be replaced with --image (it spans several lines): "
                          "write it on one line, or set it to the image and leave out --image")
    return text


def _notes(gathered, scheduled: list[str], rbac: access.Access, net: egress.Egress) -> list[str]:
    notes = list(gathered.targets.notes)
    for name in scheduled:
        needs = gathered.sources[name]
        if needs is None:
            notes.append(f"source {name} ({gathered.types[name]}): its exporter does not say what it needs in a "
                         "pod (run_needs): add its credentials, mounts and egress yourself")
            continue
        notes += [f"source {name}: {n}" for n in needs.notes]
        inside = [p for p in [*needs.paths, *(c.path for c in needs.credentials if c.path)]
                  if p.startswith(PLAN_DIR + "/")]
        notes += [f"source {name}: {p} resolves inside the plan's read-only ConfigMap mount ({PLAN_DIR}): write "
                  "the path absolute in the plan" for p in inside]
    if rbac.reads_everything:
        notes.append("RBAC: a source reads every resource of every API group (get/list/watch on * in *)")
    if net.public:
        notes.append("NetworkPolicy: public host names cannot be expressed; allowed by port only: " + ", ".join(net.public))
    if net.api_server_open:
        notes.append("NetworkPolicy: the API server is allowed on ports 443 and 6443 to any address; give its "
                     "addresses with --api-server-cidr CIDR to allow only those")
    return notes
