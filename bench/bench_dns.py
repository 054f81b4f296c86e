"""Benchmark: one DNS zone of --records records exported and replayed, dr vs its peers, in one run.

Peers, on the same zone and the same bind9 servers (Debian, on 127.0.0.1):
  * export: `dig AXFR` (the zone as text) and `octodns-dump` (octoDNS's AxfrSource to YAML);
    dr: `dr backup` of a `dns` source (SOA serial + AXFR with dnspython, stored in a repository);
  * replay into the same zone, empty, on a second bind9: `nsupdate` of a script of adds (1,000
    per update message, as octoDNS batches), and `octodns-sync --doit` from the dump (YamlProvider
    to octodns-bind's Rfc2136Provider); dr: `dr restore --source dns --to dns://...`.
  * the bind floor: the same adds as nsupdate's, their UPDATE messages built before the clock
    starts and sent at once on one connection: bind's own time to apply them (no client is faster).
  * dr's fixed cost: `dr backup` of a plan whose dns source is a zone of three records on the
    same server (process start, plan, repository, one SOA query and a tiny transfer): what every
    dr export pays before its first record, against dig's whole run.
Between replays the second server is stopped, its zone file rewritten empty (SOA, NS, glue) and
its journal removed. Every replay is checked: the zone then holds --records records and more.
Rounds alternate the order of the tools. Medians and dr/peer ratios are printed (JSON with --json).

Run: .venv/bin/python bench/bench_dns.py [--records 50000] [--rounds 3] [--no-octodns] (docs/benchmarks.md:
5,000, 20,000 and 50,000)
Needs: bind9 and bind9-dnsutils (scripts/install-test-deps), octodns-bind (dr's dependencies).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import measure, median, two_site_plan  # noqa: E402
from tests.servers import NamedServer  # noqa: E402

ZONE = "bench.test"
EMPTY_ZONE = "empty.bench.test"
SOA = "@ IN SOA ns1 hostmaster 1 3600 600 86400 300\n@ IN NS ns1\nns1 IN A 127.0.0.1\n"
SOURCES = """  - name: dns
    type: dns
    zones: [{{zone: {zone}, axfr: {{server: 127.0.0.1, port: {port}}}}}]
"""
OCTODNS = """providers:
  axfr: {{class: octodns_bind.AxfrSource, host: 127.0.0.1, port: {port}}}
  dump: {{class: octodns.provider.yaml.YamlProvider, directory: {dump}, enforce_order: false}}
  target: {{class: octodns_bind.Rfc2136Provider, host: 127.0.0.1, port: {target_port}}}
zones:
  {zone}.:
    sources: [dump]
    targets: [target]
"""


def zone_records(n: int) -> str:
    """n records: A records, and one CNAME, TXT and MX for every 10th name (the mix of a real zone)."""
    lines = []
    for i in range(n):
        kind = i % 10
        if kind == 7:
            lines.append(f"alias{i} IN CNAME host{i - 1}")
        elif kind == 8:
            lines.append(f'txt{i} IN TXT "owner=team-{i % 97} cost-center={i}"')
        elif kind == 9:
            lines.append(f"mx{i} IN MX 10 host{i - 3}")
        else:
            lines.append(f"host{i} IN A 10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}")
    return "\n".join(lines) + "\n"


def count(port: int) -> int:
    import dns.query
    import dns.zone

    return sum(1 for _ in dns.zone.from_xfr(dns.query.xfr("127.0.0.1", ZONE, port=port)).iterate_rdatas())


class Bench:
    def __init__(self, work: str, records: int, dr: str | None = None) -> None:
        self.work, self.records = work, records
        self.dr = dr or os.path.join(os.path.dirname(sys.executable), "dr")
        self.octodns = os.path.dirname(sys.executable)
        self.source = NamedServer(os.path.join(work, "bind-a"), {ZONE: {"records": SOA + zone_records(records)},
                                                                 EMPTY_ZONE: {"records": SOA}}).start()
        self.target = None
        self.plan, self.empty_plan = (self._plan(zone, name) for zone, name in ((ZONE, "plan"), (EMPTY_ZONE, "empty")))

    def _plan(self, zone: str, name: str) -> str:
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w") as handle:
            handle.write(two_site_plan("bench-dns", os.path.join(self.work, f"repo-{name}"),
                                       SOURCES.format(zone=zone, port=self.source.port)))
        return path

    def empty_target(self) -> int:
        if self.target:
            self.target.stop()
        folder = os.path.join(self.work, "bind-b")
        shutil.rmtree(folder, ignore_errors=True)
        self.target = NamedServer(folder, {ZONE: {"records": SOA}}).start()
        return self.target.port

    def check(self, what: str) -> None:
        got = count(self.target.port)
        assert got >= self.records, f"{what}: the replayed zone holds {got} records, not {self.records}+"

    # -- export ---------------------------------------------------------------------------------
    def dig(self) -> dict:
        out = os.path.join(self.work, "dig.zone")
        run = measure(["sh", "-c", f"dig @127.0.0.1 -p {self.source.port} {ZONE} AXFR +noall +answer > {out}"])
        with open(out) as handle:
            lines = handle.read().splitlines()
        if len(lines) < self.records or any(line.startswith(";") for line in lines):  # dig exits 0 on a failed transfer
            raise RuntimeError(f"dig AXFR gave {len(lines)} lines: {lines[-3:]}")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def dr_startup(self) -> dict:
        """`dr --help`: the fixed cost of a dr process (interpreter, imports, CLI), in every dr figure."""
        run = measure([self.dr, "--help"])
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def dr_backup(self, empty: bool = False) -> dict:
        name, plan = ("empty", self.empty_plan) if empty else ("plan", self.plan)
        shutil.rmtree(os.path.join(self.work, f"repo-{name}"), ignore_errors=True)
        run = measure([self.dr, "backup", "--plan", plan, "--quiet"])
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def octodns_config(self, target_port: int = 53) -> str:
        path = os.path.join(self.work, "octodns.yaml")
        with open(path, "w") as handle:
            handle.write(OCTODNS.format(port=self.source.port, dump=os.path.join(self.work, "dump"), zone=ZONE,
                                        target_port=target_port))
        return path

    def octodns_dump(self) -> dict:
        shutil.rmtree(os.path.join(self.work, "dump"), ignore_errors=True)
        run = measure([os.path.join(self.octodns, "octodns-dump"), "--config-file", self.octodns_config(),
                       "--output-dir", os.path.join(self.work, "dump"), "--quiet", f"{ZONE}.", "axfr"])
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    # -- replay ---------------------------------------------------------------------------------
    def nsupdate(self) -> dict:
        port = self.empty_target()
        script = os.path.join(self.work, "nsupdate.txt")
        with open(os.path.join(self.work, "dig.zone")) as zone, open(script, "w") as out:
            out.write(f"server 127.0.0.1 {port}\nzone {ZONE}\n")
            batch = 0
            for line in zone:
                fields = line.split()
                if not fields or fields[3] in ("SOA", "NS") or fields[0].startswith("ns1."):
                    continue
                out.write(f"update add {line}")
                batch += 1
                if batch % 1000 == 0:
                    out.write("send\n")
            out.write("send\n")
        run = measure(["nsupdate", script])
        self.check("nsupdate")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def dr_restore(self) -> dict:
        port = self.empty_target()
        run = measure([self.dr, "restore", "--plan", self.plan, "--source", "dns", "--to",
                       f"dns://127.0.0.1:{port}/{ZONE}", "--quiet"])
        self.check("dr restore")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def bind_floor(self) -> dict:
        """The fastest client there can be: the UPDATE messages of the whole zone built before the
        clock starts (1,000 records each, as nsupdate sends them), all sent on one connection, the
        clock stopped at the last answer. What is left is bind applying the updates (its journal
        and zone tree) plus loopback TCP: the floor under any replay tool."""
        import socket
        import time

        import dns.message
        import dns.update

        port = self.empty_target()
        messages, update, count = [], None, 0
        with open(os.path.join(self.work, "dig.zone")) as zone:
            for line in zone:
                fields = line.split(None, 4)
                if not fields or fields[3] in ("SOA", "NS") or fields[0].startswith("ns1."):
                    continue
                if count % 1000 == 0:
                    update = dns.update.UpdateMessage(ZONE)
                    messages.append(update)
                count += 1
                update.add(fields[0], int(fields[1]), fields[3], fields[4].strip())
        wires = [m.to_wire() for m in messages]
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"".join(len(w).to_bytes(2, "big") + w for w in wires))
            reader = sock.makefile("rb")
            for _ in wires:
                answer = dns.message.from_wire(reader.read(int.from_bytes(reader.read(2), "big")))
                assert answer.rcode() == 0, answer
        seconds = time.perf_counter() - started
        self.check("bind floor")
        return {"seconds": seconds, "rss_mb": 0.0}

    def octodns_sync(self) -> dict:
        port = self.empty_target()
        run = measure([os.path.join(self.octodns, "octodns-sync"), "--config-file", self.octodns_config(port),
                       "--doit", "--quiet"])
        self.check("octodns-sync")
        return {"seconds": run.seconds, "rss_mb": run.peak_rss_mb}

    def close(self) -> None:
        for server in (self.source, self.target):
            if server:
                server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--dr", help="the dr command to measure (default: this venv's; another build's, "
                        "for a before/after)")
    parser.add_argument("--no-octodns", action="store_true", help="dr, dig, nsupdate and the bind floor only "
                        "(octoDNS's peers take most of a run's time)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="dr-bench-dns-")
    bench = Bench(work, args.records, args.dr)
    results: dict[str, list[dict]] = {}
    try:
        for round_ in range(args.rounds):
            exports = [("dig AXFR", bench.dig), ("dr backup", bench.dr_backup), ("octodns-dump", bench.octodns_dump),
                       ("dr start-up", bench.dr_startup),
                       ("dr fixed cost", lambda: bench.dr_backup(empty=True))]
            replays = [("nsupdate", bench.nsupdate), ("dr restore", bench.dr_restore),
                       ("octodns-sync", bench.octodns_sync), ("bind floor", bench.bind_floor)]
            if args.no_octodns:
                exports, replays = [e for e in exports if not e[0].startswith("octodns")], \
                    [r for r in replays if not r[0].startswith("octodns")]
            for group in (exports, replays):  # dig and octodns-dump write what the replays read
                for name, run in (group if round_ % 2 == 0 else list(reversed(group))):
                    results.setdefault(name, []).append(run())
                    print(f"round {round_ + 1} {name}: {results[name][-1]['seconds']:.2f} s", file=sys.stderr)
    finally:
        bench.close()
        shutil.rmtree(work, ignore_errors=True)
    summary = {name: {"seconds": median([r["seconds"] for r in runs]), "rss_mb": median([r["rss_mb"] for r in runs])}
               for name, runs in results.items()}
    pairs = {"export dr/dig": ("dr backup", "dig AXFR"), "export dr/octodns-dump": ("dr backup", "octodns-dump"),
             "replay dr/nsupdate": ("dr restore", "nsupdate"), "replay dr/octodns-sync": ("dr restore", "octodns-sync"),
             "replay bind floor/nsupdate": ("bind floor", "nsupdate"),
             "export dr fixed cost/dig": ("dr fixed cost", "dig AXFR")}
    ratios = {name: summary[a]["seconds"] / summary[b]["seconds"] for name, (a, b) in pairs.items()
              if a in summary and b in summary}
    if args.json:
        print(json.dumps({"records": args.records, "rounds": args.rounds, "median": summary, "ratios": ratios}, indent=1))
        return
    print(f"{args.records} records, {args.rounds} rounds (medians)")
    for name, values in summary.items():
        print(f"  {name:14} {values['seconds']:8.2f} s  {values['rss_mb']:7.0f} MB")
    for name, ratio in ratios.items():
        print(f"  {name:24} {ratio:.2f}")


if __name__ == "__main__":
    main()
