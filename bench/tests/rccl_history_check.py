#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of bench/rccl_history.py on made-up runs (make unit-bench)."""
import json
import math
import os
import subprocess
import sys
import tempfile

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rccl_history.py")
n = 0


def ok(cond, what, *evidence):
    global n
    n += 1
    if not cond:
        print("not ok %d - %s" % (n, what))
        for e in evidence:
            print("# " + str(e).replace("\n", "\n# "))
        sys.exit(1)
    print("ok %d - %s" % (n, what))


def run(*args):
    p = subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def result(d, stamp, plugin, b1, b4, noreduce=None, channels=2, early=False, clocksource=None):
    r = {"timestamp": stamp, "size_mib": 64, "rounds": len(plugin), "iters": 4,
         "cpu": "max", "smp": 1, "reducer": "thread", "channels": channels,
         "headline_slice": 4194304,
         "plugin_busbw_gbps": {"4194304": plugin, "524288": plugin},
         "ratio": round(sorted(plugin)[len(plugin) // 2] / sorted(b1)[len(b1) // 2], 2)}
    if early:
        r["raw_bidir_per_dir_gbps"] = b1
    else:
        r["raw_bidir1_per_dir_gbps"] = b1
        r["raw_bidir4_per_dir_gbps"] = b4
        r["ratio_per_round"] = [round(p / max(x, y), 2) for p, x, y in zip(plugin, b1, b4)]
    if noreduce:
        r["plugin_noreduce_busbw_gbps"] = noreduce
    if clocksource:
        r["clocksource"] = clocksource
    with open(os.path.join(d, "rccl-allreduce-%s.json" % stamp), "w") as f:
        json.dump(r, f)
    return r


def tci(means):
    m = sum(means) / len(means)
    sd = math.sqrt(sum((x - m) ** 2 for x in means) / (len(means) - 1))
    half = {2: 12.706, 3: 4.303, 4: 3.182}[len(means)] * sd / math.sqrt(len(means))
    return m, m - half, m + half


with tempfile.TemporaryDirectory() as d:
    # three runs at ~0.94 of raw: met
    b = [1.0, 1.0, 1.0]
    r1 = result(d, "20260101T000001Z", [0.95, 0.93, 0.94], b, [0.9, 0.9, 0.9], [0.99, 0.98, 0.97])
    r2 = result(d, "20260101T000002Z", [0.92, 0.96, 0.94], b, [0.9, 0.9, 0.9], [0.97, 0.99, 0.98])
    r3 = result(d, "20260101T000003Z", [0.94, 0.94, 0.95], b, [0.9, 1.02, 0.9], [0.96, 0.98, 0.99])
    result(d, "20251231T000000Z", [0.5, 0.5, 0.5], b, b, early=True)
    rc, out, err = run("--dir", d, "--json")
    j = json.loads(out) if rc == 0 else {}
    ok(rc == 0 and len(j["groups"]) == 1 and j["left_out_early"] == 1,
       "three comparable runs pooled, the early one without per-round ratios left out", rc, out, err)
    g = j["groups"][0]
    rounds = r1["ratio_per_round"] + r2["ratio_per_round"] + r3["ratio_per_round"]
    m, lo, hi = tci([sum(r["ratio_per_round"]) / 3 for r in (r1, r2, r3)])
    ok(g["ratio"]["rounds"] == 9 and abs(g["ratio"]["round_mean"] - sum(rounds) / 9) < 1e-9 and
       g["ratio"]["rounds_at_target"] == sum(1 for x in rounds if x >= 0.9),
       "per-round mean and rounds at the target over all runs' rounds (round 2 of run 3 against its 4-stream raw 1.02)",
       g["ratio"], rounds)
    ok(abs(g["ratio"]["ci95"][0] - lo) < 1e-9 and abs(g["ratio"]["ci95"][1] - hi) < 1e-9 and
       g["ratio"]["verdict"] == "met", "95 %% interval over the run means (t, 2 df): %.3f .. %.3f, met" % (lo, hi),
       g["ratio"])
    tr = [0.99, 0.98, 0.97, 0.97, 0.99, 0.98, 0.96, 0.98 / 1.02, 0.99]
    ok(g["transport"] and abs(g["transport"]["round_mean"] - sum(tr) / 9) < 1e-9,
       "transport per round = adds-skipped busbw / the better bidirectional raw of the round", g["transport"])
    rc, out, err = run("--dir", d)
    ok(rc == 0 and "3 run(s), 9 rounds" in out and "target 0.90 MET" in out and "1 early run" in out,
       "text output: runs, rounds, the verdict", out, err)
    rc, out, err = run("--dir", d, "--target", "0.99")
    ok(rc == 0 and "target 0.99 NOT MET" in out, "a target above the interval: not met", out, err)
    rc, out, err = run("--dir", d, "--target", str(round(m, 3)))
    ok(rc == 0 and "UNDECIDED" in out, "a target inside the interval: undecided", out, err)
    # a newer run made another way (one channel) is a group of its own
    result(d, "20260102T000000Z", [0.8, 0.8, 0.8], b, b, channels=1)
    rc, out, err = run("--dir", d, "--json")
    j = json.loads(out) if rc == 0 else {}
    ok(rc == 0 and len(j["groups"]) == 1 and j["groups"][0]["group"]["channels"] == 1 and
       j["groups"][0]["ratio"]["runs"] == 1 and j["groups"][0]["ratio"]["verdict"] == "undecided",
       "default: only the newest run's configuration; one run decides nothing", out, err)
    rc, out, err = run("--dir", d, "--json", "--all-groups")
    ok(rc == 0 and len(json.loads(out)["groups"]) == 2, "--all-groups: both configurations", out, err)
    rc, out, err = run("--dir", d, "--json", "--since", "20260101T000002Z", "--all-groups")
    ok(rc == 0 and [x["ratio"]["runs"] for x in json.loads(out)["groups"]] == [2, 1],
       "--since leaves the older runs out", out, err)
    # the guests' clocksource: a run that does not name it kept time on the
    # TSC and pools with one that says tsc; another clocksource is a group
    # of its own
    def two_channel_runs(cs):
        rc, out, err = run("--dir", d, "--json", "--all-groups")
        return sum(x["ratio"]["runs"] for x in json.loads(out)["groups"]
                   if x["group"]["channels"] == 2 and x["group"]["clocksource"] == cs) if rc == 0 else -1
    before = two_channel_runs("tsc")
    result(d, "20260102T000001Z", [0.9, 0.9, 0.9], b, b, clocksource="tsc")
    ok(before > 0 and two_channel_runs("tsc") == before + 1,
       "a run without a clocksource pools with clocksource tsc", before)
    result(d, "20260102T000002Z", [0.7, 0.7, 0.7], b, b, clocksource="acpi_pm")
    rc, out, err = run("--dir", d, "--json")
    j = json.loads(out) if rc == 0 else {}
    ok(rc == 0 and j["groups"][0]["group"]["clocksource"] == "acpi_pm" and
       j["groups"][0]["ratio"]["runs"] == 1 and two_channel_runs("tsc") == before + 1,
       "a run with another clocksource is a group of its own", out, err)
    # bad input: a clear error naming the file, exit 1; bad arguments exit 2
    with open(os.path.join(d, "rccl-allreduce-20260103T000000Z.json"), "w") as f:
        f.write("{not json")
    rc, out, err = run("--dir", d)
    ok(rc == 1 and "rccl-allreduce-20260103T000000Z.json" in err and "JSON" in err,
       "a broken result file: exit 1, named", rc, err)
    with open(os.path.join(d, "rccl-allreduce-20260103T000000Z.json"), "w") as f:
        json.dump({"timestamp": "x", "plugin_busbw_gbps": {}}, f)
    rc, out, err = run("--dir", d)
    ok(rc == 1 and "no 'ratio'" in err, "a result without a ratio: exit 1, says what is missing", rc, err)
    with open(os.path.join(d, "rccl-allreduce-20260103T000000Z.json"), "w") as f:
        json.dump({"timestamp": "x", "ratio": 1, "plugin_busbw_gbps": {}, "ratio_per_round": [0.9, -1],
                   "raw_bidir1_per_dir_gbps": [1, 1]}, f)
    rc, out, err = run("--dir", d)
    ok(rc == 1 and "positive numbers" in err, "negative per-round ratios: exit 1", rc, err)
    rc, out, err = run("--dir", d, "--target", "0")
    ok(rc == 2 and "--target" in err, "--target 0: exit 2 with a message", rc, err)
    rc, out, err = run("--bogus")
    ok(rc == 2, "an unknown option: exit 2", rc, err)
    rc, out, err = run("--dir", os.path.join(d, "none"))
    ok(rc == 1 and "no rccl-allreduce" in err, "no results: exit 1 with a message", rc, err)

# --latency: the latency part's runs (bench/results/rccl-latency-*.json)


def lat_result(d, stamp, sizes, clocksource=None):
    r = {"timestamp": stamp, "rounds": 3, "iters": 2000, "host_cores": 2, "cpu": "max", "smp": 1,
         "sizes": sizes}
    if clocksource:
        r["clocksource"] = clocksource
    with open(os.path.join(d, "rccl-latency-%s.json" % stamp), "w") as f:
        json.dump(r, f)


with tempfile.TemporaryDirectory() as d:
    raw1, pp1, ar1, ho1 = [200, 250, 100], [260, 300, 150], [500, 600, 260], [300, 360, 150]
    raw2, pp2, ar2 = [220, 200, 240], [264, 250, 264], [484, 420, 528]
    lat_result(d, "20260101T000001Z", {
        "8": {"raw_p50_us": raw1, "plugin_pingpong_p50_us": pp1, "plugin_allreduce_p50_us": ar1,
              "handover_pingpong_p50_us": ho1},
        "4096": {"raw_p50_us": raw1, "plugin_pingpong_p50_us": raw1, "plugin_allreduce_p50_us": ar1}})
    # the second run did not measure the hand-over (an older run)
    lat_result(d, "20260101T000002Z", {
        "8": {"raw_p50_us": raw2, "plugin_pingpong_p50_us": pp2, "plugin_allreduce_p50_us": ar2}})
    rc, out, err = run("--latency", "--dir", d, "--json")
    j = json.loads(out) if rc == 0 else {}
    ok(rc == 0 and len(j["groups"]) == 1 and j["groups"][0]["runs"] == ["20260101T000001Z", "20260101T000002Z"],
       "--latency: two runs made the same way pooled", rc, out, err)
    s8 = j["groups"][0]["sizes"]["8"] if rc == 0 else {}
    per1 = [p / r for p, r in zip(pp1, raw1)]
    per2 = [p / r for p, r in zip(pp2, raw2)]
    m, lo, hi = tci([sum(per1) / 3, sum(per2) / 3])
    pp = s8.get("ping-pong / raw one-way", {})
    ok(pp.get("rounds") == 6 and abs(pp["round_mean"] - sum(per1 + per2) / 6) < 1e-9 and
       abs(pp["ci95"][0] - lo) < 1e-9 and abs(pp["ci95"][1] - hi) < 1e-9 and "verdict" not in pp,
       "--latency: ping-pong / raw per round over both runs, the interval over the run means, no verdict",
       pp, per1, per2)
    arr = s8.get("all-reduce / 2 raw one-way", {})
    ok(arr and abs(arr["round_mean"] - sum(a / (2 * r) for a, r in zip(ar1 + ar2, raw1 + raw2)) / 6) < 1e-9,
       "--latency: the all-reduce against two raw one-way latencies", arr)
    hov = s8.get("caller reaps / hands over (ping-pong)", {})
    ok(hov.get("runs") == 1 and hov.get("rounds") == 3 and hov["ci95"] is None and
       abs(hov["round_mean"] - sum(p / h for p, h in zip(pp1, ho1)) / 3) < 1e-9,
       "--latency: a figure only one run measured comes from that run alone", hov)
    s4 = j["groups"][0]["sizes"].get("4096", {}) if rc == 0 else {}
    ok(s4.get("ping-pong / raw one-way", {}).get("runs") == 1 and
       "caller reaps / hands over (ping-pong)" not in s4,
       "--latency: a size only one run has; no hand-over figure where none was measured", s4)
    rc, out, err = run("--latency", "--dir", d)
    ok(rc == 0 and "8 B, ping-pong / raw one-way: 2 run(s), 6 rounds" in out and
       "95 %% interval %.2f .. %.2f" % (lo, hi) in out, "--latency: text output", out, err)
    lat_result(d, "20260102T000000Z", {"8": {"raw_p50_us": raw1, "plugin_pingpong_p50_us": pp1}},
               clocksource="acpi_pm")
    rc, out, err = run("--latency", "--dir", d, "--json")
    j = json.loads(out) if rc == 0 else {}
    ok(rc == 0 and len(j["groups"]) == 1 and j["groups"][0]["group"]["clocksource"] == "acpi_pm" and
       j["groups"][0]["runs"] == ["20260102T000000Z"],
       "--latency: another clocksource is a group of its own, the newest run's by default", out, err)
    rc, out, err = run("--latency", "--dir", d, "--json", "--all-groups")
    ok(rc == 0 and [g["group"]["clocksource"] for g in json.loads(out)["groups"]] == ["tsc", "acpi_pm"],
       "--latency --all-groups: both clocksources, a run without one on the TSC", out, err)
    lat_result(d, "20260103T000000Z", {"8": {"raw_p50_us": [1, 2], "plugin_pingpong_p50_us": [1, 2, 3]}})
    rc, out, err = run("--latency", "--dir", d)
    ok(rc == 1 and "rccl-latency-20260103T000000Z.json" in err and "equally long" in err,
       "--latency: figures of unequal length: exit 1, the file named", rc, err)
    lat_result(d, "20260103T000000Z", {"eight": {"raw_p50_us": [1], "plugin_pingpong_p50_us": [1]}})
    rc, out, err = run("--latency", "--dir", d)
    ok(rc == 1 and "not a byte count" in err, "--latency: a size that is not a number: exit 1", rc, err)
    lat_result(d, "20260103T000000Z", {"8": {"raw_p50_us": [0], "plugin_pingpong_p50_us": [1]}})
    rc, out, err = run("--latency", "--dir", d)
    ok(rc == 1 and "positive" in err, "--latency: a zero latency: exit 1", rc, err)
    rc, out, err = run("--latency", "--dir", os.path.join(d, "none"))
    ok(rc == 1 and "no rccl-latency" in err, "--latency: no results: exit 1 with a message", rc, err)
print("1..%d" % n)
