"""Connecting to a cluster: kubeconfig or in-cluster credentials, and the restore destination.

The kubeconfig is resolved with kubectl's rules (dr.kits.kubeconfigs: the option's
file alone, else every $KUBECONFIG file merged, else ~/.kube/config, else in-cluster).

The client's own retries are switched off (urllib3 would silently retry a 429 or a timed-out
read): retrying, with backoff that honours Retry-After, is requesting.py's job, and a list
that times out must fail loudly rather than be retried in the dark. Sockets get a receive
buffer that holds a whole list page, for the pipelined lists of requesting.Api.pages.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from dr.kits.kubeconfigs import KubeconfigError, load_into, resolve

if TYPE_CHECKING:  # the package itself is imported when a client is made: it costs 0.2 s to load
    import kubernetes.client
    import kubernetes.dynamic

RECEIVE_BUFFER = 4 << 20  # capped by net.core.rmem_max


class ConnectionFailure(Exception):
    """No usable credentials for the cluster (a permanent error: retrying will not help)."""


def api_client(kubeconfig: str | None, context: str | None, *, pool_size: int) -> kubernetes.client.ApiClient:
    """An ApiClient for `kubeconfig`/`context`; with neither available, the in-cluster account."""
    import kubernetes.client
    from kubernetes.utils.keepalive import tcp_keepalive_socket_options

    configuration = kubernetes.client.Configuration()
    try:
        load_into(configuration, resolve(kubeconfig, context))
    except KubeconfigError as exc:
        raise ConnectionFailure(str(exc)) from None
    configuration.retries = False
    configuration.connection_pool_maxsize = max(pool_size, 4)
    # A receive buffer that holds a whole page: the server hands page n+1 over while this
    # process still works on page n (requesting.Api.pages), instead of stalling on our reads.
    configuration.socket_options = list(tcp_keepalive_socket_options()) + [
        (socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)]
    return kubernetes.client.ApiClient(configuration)


def dynamic_client(client: kubernetes.client.ApiClient, cache_dir: str) -> kubernetes.dynamic.DynamicClient:
    """A DynamicClient whose discovery cache is private to this run (never a stale shared file)."""
    import kubernetes.dynamic

    return kubernetes.dynamic.DynamicClient(client, cache_file=os.path.join(cache_dir, "discovery.json"))
