"""Places: a root (a directory, an S3 prefix) holding files at relative paths, for every user.

The one storage contract of dr: checkpoints and their copies, MLflow weight copies and the
repository's stores (PlaceStore, dr/repository/stores/placing.py) work through it.
- contract.py     the Place contract, in words, and its errors (transient or permanent).
- conformance.py  the checks every place must pass, importable by third parties.
- files.py        FileStat, the relative-path check, LocalTree (a directory walked and read).
- bodies.py       seekable request bodies over buffers (a part sent without a copy).
- parts.py        the part size a file of a given size is written in (S3's limits).
- local.py        LocalPlace: a directory, written through temporary files and renames.
- s3.py           S3Place: a bucket prefix on one endpoint; listing, reads, small puts.
- s3writing.py    S3 objects written by parts: resumable multipart uploads, server-side copies.
- s3locking.py    S3 Object Lock requests (retention, versions); the policy is the caller's.
- s3errors.py     how an S3 request's failure becomes the contract's error (missing, changed, transient, permanent).
- retrying.py     RetryingPlace: transient failures retried, outside every place.
- streaming.py    whole files written from a stream of known size, and a Reader as a file.
"""
