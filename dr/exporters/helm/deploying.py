"""What a helm source needs in a pod (contract v2 run_needs): its chart sources and their logins.

Endpoints: the repositories and registries of the charts the plan lists. Charts found in the
other sources' dependencies (`from_plan`) come from repositories known only at run time, which
a note says. Login: the auth file.
"""

from __future__ import annotations

import os

from dr.contract import Credential, RunNeeds
from dr.exporters.helm.options import HelmOptions
from dr.exporters.helm.references import OCI


def run_needs(options: HelmOptions, base_dir: str) -> RunNeeds:
    endpoints = []
    for spec in options.charts:
        repo = spec.ref().repo
        if repo.startswith(OCI):
            host = repo[len(OCI):].split("/", 1)[0]
            repo = f"{options.scheme_for(host)}://{host}"
        endpoints.append(repo)
    needs = RunNeeds(endpoints=list(dict.fromkeys(endpoints)))
    if options.from_plan:
        needs.notes.append("charts the plan's Helm releases pin come from chart repositories known only when "
                           "the backup runs: allow egress to them yourself")
    if options.auth_file:
        needs.credentials.append(Credential("chart-registry-auth", "a docker config.json with the chart "
                                            "registries' logins", path=os.path.join(base_dir, options.auth_file)))
    return needs
