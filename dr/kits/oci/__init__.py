"""The kit's OCI registry client: what the images and helm exporters (and any plugin) use to
speak the OCI distribution API, with one credential resolver (issue 32, item 1).

It sits in dr.kits, under the exporters, so two exporters share it without importing each other:
  client       the distribution API on requests: retries, streaming, digest checks
  challenges   answering a 401's WWW-Authenticate (bearer tokens, basic), for the client and for
               the helm exporter's chart repositories alike
  credentials  who to log in as, per host: docker config files, credential helpers, ECR tokens
  pull_secrets the docker configs of Kubernetes pull secrets, for the resolver
  errors       what the client raises, the retryable ones a dr.kits.retrying.Transient
  streams      blob bytes hashed and counted as they pass, cut into upload pieces
"""
