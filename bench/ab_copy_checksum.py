"""A/B: what asking S3 for a copy's SHA-256 costs on moto (server-side CopyObject).

Explains the gap between dr's server-side checkpoint copy and s5cmd in docs/benchmarks.md:
dr asks for ChecksumAlgorithm=SHA256 on each copy (its digest without reading the bytes);
s5cmd asks for nothing. Run: .venv/bin/python bench/ab_copy_checksum.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402

from tests.servers import moto_server  # noqa: E402

FILES, SIZE, ROUNDS = 8, 128 << 20, 3


def main() -> None:
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1")
    os.environ.pop("AWS_CA_BUNDLE", None)
    with moto_server() as server:
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{server.port}",
                          config=Config(max_pool_connections=32, s3={"addressing_style": "path"}))
        s3.create_bucket(Bucket="ab-src")
        s3.create_bucket(Bucket="ab-dst")
        blob = os.urandom(SIZE)
        for i in range(FILES):
            s3.put_object(Bucket="ab-src", Key=f"f{i}", Body=blob)

        def run(extra: dict, tag: str) -> float:
            started = time.perf_counter()
            with ThreadPoolExecutor(FILES) as pool:
                list(pool.map(lambda i: s3.copy_object(Bucket="ab-dst", Key=f"{tag}/f{i}",
                                                       CopySource={"Bucket": "ab-src", "Key": f"f{i}"},
                                                       **extra), range(FILES)))
            return time.perf_counter() - started

        plain, checksum = [], []
        for r in range(ROUNDS):
            plain.append(run({}, f"plain{r}"))
            checksum.append(run({"ChecksumAlgorithm": "SHA256"}, f"sha{r}"))
    p, c = statistics.median(plain), statistics.median(checksum)
    print(f"{FILES} x {SIZE >> 20} MiB CopyObject, medians of {ROUNDS}: plain {p:.2f} s, "
          f"with SHA-256 {c:.2f} s, ratio {c / p:.2f}")


if __name__ == "__main__":
    main()
