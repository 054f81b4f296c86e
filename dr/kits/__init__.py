"""The kit: infrastructure the repository, the contract and the exporters share (issue 32, item 1).

It sits at the bottom of dr and imports nothing else of dr, so every layer may use it and any
exporter, built-in or third-party, may import it without touching another exporter:
- retrying: one retry policy and the one base (`Transient`) of every error worth retrying;
- kubeconfigs: one kubeconfig resolver, with kubectl's rules;
- oci: one OCI registry client and one registry credential resolver (images, helm);
- places: one place contract (local directories, S3 prefixes, the retrying wrapper, the
  conformance suite) for checkpoints, their copies, MLflow weight copies and the
  repository's stores;
- s3: the S3 plumbing under the S3 places (botocore clients, the lean client);
- tls: CA bundles, client certificates and proxies, the way each ecosystem configures them;
- syncing: many staged files made durable together (fsyncs issued at once);
- validators: the names and values that several exporters check alike.
"""
