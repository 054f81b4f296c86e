# dr: backup and disaster recovery for AI platforms on Kubernetes.
#
#   docker build -t dr:0.1.0 .
#   docker run --rm dr:0.1.0                 # prints --help
#   docker run --rm -v "$PWD/plans:/plans:ro" dr:0.1.0 snapshots --plan /plans/single-cluster.yaml
#
# See deploy/ for running it as a Kubernetes CronJob.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git: the git exporter runs `git ls-remote` / `git clone --mirror` / `git bundle`.
# openssh-client: for ssh (git@host:org/repo) remotes. ca-certificates: for https remotes and S3.
# graphviz: `dot` draws the dependency picture of `dr audit --format html` (without it the
# report says the picture was left out).
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates graphviz \
 && rm -rf /var/lib/apt/lists/*

# Only what the package needs is in the build context (see .dockerignore). The Python packages
# come from requirements.lock at exact versions and without resolving (--no-deps), so an image
# built twice holds the same ones; `pip check` fails the build if the lock is inconsistent.
# tests/shipping/test_bare_install.py runs these same three steps into a bare venv.
COPY . /src
RUN pip install --no-cache-dir --no-deps -r /src/requirements.lock \
 && pip install --no-cache-dir --no-deps /src \
 && pip check \
 && rm -rf /src

# The base image ships the standard library without bytecode (its build deletes every .pyc), and
# at run time nothing may write it (a non-root user, and a read-only root filesystem in the
# CronJob), so without this step every dr command compiled the ~150 standard modules it imports
# from source: `dr --version` took 0.48 s instead of 0.11 s, a backup of one small file 1.18 s
# instead of 0.48 s (docs/benchmarks.md, "Start-up in the container image"). pip has already
# compiled what it installed. Test folders are skipped: the base image has none, and lib2to3's
# test data is Python 2 on purpose.
RUN python -m compileall -q -j 0 -x '/(site-packages|tests?|idle_test)/' /usr/local/lib/python3.11

# Never run as root. A fixed numeric UID lets Kubernetes check runAsNonRoot.
RUN groupadd --system --gid 10001 dr \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/dr --create-home \
            --shell /usr/sbin/nologin dr
USER 10001:10001
WORKDIR /home/dr

ENTRYPOINT ["dr"]
CMD ["--help"]
