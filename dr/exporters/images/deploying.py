"""What an images source needs in a pod (contract v2 run_needs): its registries and their logins.

Registries: the DR registries (`to`) and the hosts of the images and repositories the plan
names. Images found in the other sources' dependencies (`from_plan`) come from registries
known only at run time, which a note says. Logins: the auth file, the pull secrets (read
through the API), and the AWS keys for an ECR token.
"""

from __future__ import annotations

import os

from dr.contract import AWS_CREDENTIALS, ApiRead, Credential, RunNeeds
from dr.exporters.images.options import ImagesOptions
from dr.exporters.images.references import DOCKER_HUB, DOCKER_HUB_API, split_host


def run_needs(options: ImagesOptions, base_dir: str) -> RunNeeds:
    hosts = [split_host(text)[0] for text in [*options.images, *options.repositories]]
    endpoints = [r.url for r in options.dr_registries()]
    endpoints += [options.endpoints.get(h) or f"{options.scheme_for(h)}://{DOCKER_HUB_API if h == DOCKER_HUB else h}"
                  for h in hosts]
    endpoints += list(options.endpoints.values())  # a source registry reached elsewhere is reached there
    needs = RunNeeds(endpoints=list(dict.fromkeys(endpoints)))
    if options.from_plan:
        needs.notes.append("images named by the plan's other sources are pulled from registries known only "
                           "when the backup runs: allow egress to them (port 443) yourself")
    if options.auth_file:
        needs.credentials.append(Credential("registry-auth", "a docker config.json with the registries' logins",
                                            path=os.path.join(base_dir, options.auth_file)))
    for name in options.pull_secrets:
        namespace, _, secret = name.partition("/")
        needs.api_reads.append(ApiRead("", ("secrets",), (namespace,), f"the pull secret {secret}"))
    if options.ecr and any(".dkr.ecr." in e for e in needs.endpoints):
        needs.credentials += AWS_CREDENTIALS
    return needs
