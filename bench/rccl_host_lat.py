#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How a test() that waits gets its completion, measured on this host.

Runs netconf's latency benchmark (--bench-lat: ping-pong and all-reduce of
small messages, every message checked) between two processes over the shm
backend, once per way of waiting, in alternating order per round, so every
way sees the same machine:

  polls       ODL_TB5_RCCL_BUSY_POLL_US=50  the caller reaps, polling first
  sleeps      ODL_TB5_RCCL_BUSY_POLL_US=0   the caller reaps, sleeping
  hands-over  ODL_TB5_RCCL_CALLER_REAP=0    the progress thread reaps and
                                            wakes the caller
  no-wait     ODL_TB5_RCCL_TEST_WAIT_US=0   test() never waits (the
                                            progress thread reaps)

No emulation is involved: this measures the plugin's own hand-offs, which
the emulated guests (bench/rccl.sh --what latency) hide behind the link's
hundreds of microseconds. Prints per size and way the medians over the
rounds of each round's p50 and p99 (microseconds) and each way's ratio to
`sleeps` per round; writes bench/results/rccl-hostlat-<UTC>.{txt,json}.

  rccl_host_lat.py [--netconf PATH] [--rounds N] [--iters N]
                   [--sizes 8,4096,65536] [--ways a,b,...] [--out-dir DIR]

Exit status 0 when every run passed, 1 when a run failed (its output
tail on stderr), 2 on bad arguments.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WAYS = {
    "polls": {"ODL_TB5_RCCL_BUSY_POLL_US": "50"},
    "sleeps": {"ODL_TB5_RCCL_BUSY_POLL_US": "0"},
    "hands-over": {"ODL_TB5_RCCL_CALLER_REAP": "0"},
    "no-wait": {"ODL_TB5_RCCL_TEST_WAIT_US": "0"},
}
BASE = "sleeps"
KINDS = ("pingpong", "allreduce")


def run_once(netconf, way, sizes, iters, timeout):
    env = dict(os.environ)
    for k in ("ODL_TB5_RCCL_BUSY_POLL_US", "ODL_TB5_RCCL_CALLER_REAP",
              "ODL_TB5_RCCL_TEST_WAIT_US"):
        env.pop(k, None)
    env.update(NCCL_NET_PLUGIN="odl_tb5", ODL_TB5_RCCL_STATS="off")
    env.update(WAYS[way])
    argv = [netconf, "--bench-lat", ",".join(str(s) for s in sizes),
            "--lat-iters", str(iters), "--timeout", str(timeout)]
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout + 60)
    got = {}
    for line in p.stdout.splitlines():
        if line.startswith("# lat "):
            j = json.loads(line[len("# lat "):])
            got[j["size"]] = j
    if p.returncode != 0 or sorted(got) != sorted(sizes):
        tail = "\n".join(p.stdout.splitlines()[-30:])
        raise RuntimeError("%s (%s): exit %d, sizes %s\n%s" % (
            way, " ".join("%s=%s" % kv for kv in WAYS[way].items()),
            p.returncode, sorted(got), tail))
    return got


def summarise(rounds, ways, sizes):
    """rounds: [{way: {size: lat json}}] -> {size: {kind: {way: stats}}}"""
    out = {}
    for size in sizes:
        out[size] = {}
        for kind in KINDS:
            per = {}
            for way in ways:
                p50 = [r[way][size][kind]["p50_us"] for r in rounds]
                p99 = [r[way][size][kind]["p99_us"] for r in rounds]
                st = {"p50_us": statistics.median(p50),
                      "p50_min_us": min(p50), "p50_max_us": max(p50),
                      "p99_us": statistics.median(p99), "rounds_p50_us": p50}
                if way != BASE and BASE in ways:
                    ratios = [r[way][size][kind]["p50_us"] / r[BASE][size][kind]["p50_us"]
                              for r in rounds]
                    st["p50_vs_%s" % BASE] = statistics.median(ratios)
                per[way] = st
            out[size][kind] = per
    return out


def table(summary, ways, sizes):
    lines = []
    head = "| size | kind | " + " | ".join(ways) + " |"
    lines.append(head)
    lines.append("|" + "---|" * (2 + len(ways)))
    for size in sizes:
        for kind in KINDS:
            cells = []
            for way in ways:
                st = summary[size][kind][way]
                c = "%.2f (p99 %.1f)" % (st["p50_us"], st["p99_us"])
                if "p50_vs_%s" % BASE in st:
                    c += " %.2f×" % st["p50_vs_%s" % BASE]
                cells.append(c)
            lines.append("| %d B | %s | %s |" % (size, kind, " | ".join(cells)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--netconf", default=os.path.join(TOP, "build", "rccl", "netconf"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--sizes", default="8,4096,65536")
    ap.add_argument("--ways", default="polls,sleeps,hands-over,no-wait")
    ap.add_argument("--out-dir", default=os.path.join(TOP, "bench", "results"))
    ap.add_argument("--timeout", type=int, default=300)
    a = ap.parse_args()
    try:
        sizes = [int(s) for s in a.sizes.split(",")]
    except ValueError:
        ap.error("--sizes: numbers separated by commas")
    ways = a.ways.split(",")
    bad = [w for w in ways if w not in WAYS]
    if bad or len(set(ways)) != len(ways):
        ap.error("--ways: each of %s at most once (got %s)" % (", ".join(WAYS), a.ways))
    if not 1 <= a.rounds <= 100 or not 10 <= a.iters <= 1000000:
        ap.error("--rounds 1..100, --iters 10..1000000")
    if not os.access(a.netconf, os.X_OK):
        print("rccl_host_lat: %s missing: run 'make rccl'" % a.netconf, file=sys.stderr)
        return 1
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    rounds = []
    for i in range(a.rounds):
        order = ways[i % len(ways):] + ways[:i % len(ways)]
        r = {}
        for way in order:
            try:
                r[way] = run_once(a.netconf, way, sizes, a.iters, a.timeout)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                print("rccl_host_lat: round %d: %s" % (i + 1, e), file=sys.stderr)
                return 1
        rounds.append(r)
        print("round %d/%d: %s" % (i + 1, a.rounds, "  ".join(
            "%s %.2f" % (w, r[w][sizes[0]]["pingpong"]["p50_us"]) for w in ways)), flush=True)
    summary = summarise(rounds, ways, sizes)
    try:
        ncpus = len(os.sched_getaffinity(0))
    except OSError:
        ncpus = os.cpu_count()
    info = {"utc": stamp, "host": platform.node(), "cpus": ncpus,
            "load": os.getloadavg()[0], "rounds": a.rounds, "iters": a.iters,
            "sizes": sizes, "ways": {w: WAYS[w] for w in ways}}
    text = ("# plugin latency on the host over shm (%s; %d CPUs; %d rounds x %d iterations)\n"
            "# per size and way: median over the rounds of the p50 (us), the p99's median, "
            "and the median per-round ratio of the p50 to '%s'\n%s\n" % (
                stamp, ncpus, a.rounds, a.iters, BASE, table(summary, ways, sizes)))
    print(text, end="")
    os.makedirs(a.out_dir, exist_ok=True)
    base = os.path.join(a.out_dir, "rccl-hostlat-%s" % stamp)
    with open(base + ".txt", "w") as f:
        f.write(text)
    with open(base + ".json", "w") as f:
        json.dump({"info": info, "summary": {str(k): v for k, v in summary.items()},
                   "rounds": [{w: {str(s): r[w][s] for s in sizes} for w in ways}
                              for r in rounds]}, f, indent=1)
        f.write("\n")
    print("wrote %s.{txt,json}" % base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
