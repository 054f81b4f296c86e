"""What an etcd source needs in a pod (contract v2 run_needs): its members' client URLs, and the
client TLS files the plan names (a CA bundle, a client certificate and its key), mounted from the
credentials Secret at the paths the plan gives them, each under a key of its own per cluster.
"""

from __future__ import annotations

import os

from dr.contract import Credential, RunNeeds
from dr.exporters.etcd.options import EtcdOptions

_TLS_FILES = (("ca_file", "ca", "the PEM bundle that signs the etcd members' certificates"),
              ("cert_file", "cert", "the etcd client certificate (PEM) the backup presents"),
              ("key_file", "key", "the private key of that client certificate (PEM)"))


def run_needs(options: EtcdOptions, base_dir: str, source: str) -> RunNeeds:
    needs = RunNeeds()
    for cluster in options.clusters:
        needs.endpoints += [url for url in cluster.endpoints if url not in needs.endpoints]
        for option, short, what in _TLS_FILES:
            name = getattr(cluster, option)
            if name:
                needs.credentials.append(Credential(f"etcd-{short}-{source}-{cluster.name}", f"{what} (cluster "
                                                    f"{cluster.name})", path=os.path.join(base_dir, name)))
    return needs
