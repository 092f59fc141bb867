#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Benchmark history: every recorded run of bench/rccl.sh, pooled.

One run of bench/rccl.sh has five rounds on a noisy machine; its ratio
(plugin all-reduce bus bandwidth / bidirectional raw odl_tb5_cli per
direction) moves by +-0.05 between runs of the same code. This reads the
runs' JSON files (bench/results/rccl-allreduce-*.json), keeps the runs made
the same way as the newest one (channels, vCPUs, size, CPU model, headline
slice, reducer, iterations, the guests' clocksource), and says whether the target is met with
confidence: the mean of the runs' per-round ratios and its 95 % interval
(Student's t over the runs: rounds of one run share the machine's state and
are not independent).

  rccl_history.py [--dir DIR] [--target R] [--since UTC] [--all-groups]
                  [--json] [FILE...]
  rccl_history.py --latency [--dir DIR] [--since UTC] [--all-groups]
                  [--json] [FILE...]

--latency pools the latency part instead (bench/results/rccl-latency-*.json,
runs made the same way: CPU model, vCPUs, messages per round, clocksource):
per message size, the plugin's ping-pong one-way p50 against the same
round's raw odl_tb5_cli one-way p50, the two-rank all-reduce's p50 against
two raw one-way latencies (its floor), and the caller reaping against the
progress thread handing over (ping-pong p50s of the same round), each with
the mean of the runs and its 95 % interval. There is no target for these:
no verdict.

Exit status: 0 when the files were read (whatever the verdict), 1 when a
file is not a benchmark result (named on stderr), 2 on bad arguments.
"""
import argparse
import glob
import json
import math
import os
import statistics
import sys

# two-sided 95 % quantiles of Student's t by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
       8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160,
       14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093,
       20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}

GROUP_KEYS = ("channels", "smp", "size_mib", "cpu", "headline_slice",
              "reducer", "iters", "clocksource")
# what a run recorded before the key existed was made with: the TCG guests
# kept time on the TSC until vmpair gave them tsc=unstable (2026-11-28)
GROUP_DEFAULTS = {"clocksource": "tsc"}
LAT_GROUP_KEYS = ("cpu", "smp", "iters", "clocksource")
# per size: (name, numerator, denominator, factor on the denominator)
LAT_RATIOS = (("ping-pong / raw one-way", "plugin_pingpong_p50_us", "raw_p50_us", 1),
              ("all-reduce / 2 raw one-way", "plugin_allreduce_p50_us", "raw_p50_us", 2),
              ("caller reaps / hands over (ping-pong)", "plugin_pingpong_p50_us",
               "handover_pingpong_p50_us", 1))


def t95(df):
    if df in T95:
        return T95[df]
    lower = [k for k in T95 if k < df]
    return T95[max(lower)] if df < 120 else 1.960


class BadResult(Exception):
    pass


def per_round(d, name):
    """Per-round ratios of the plugin figure `name` against the better of
    the round's two bidirectional raw figures (as bench/rccl.sh computes
    its headline's per-round ratios)."""
    b1, b4 = d.get("raw_bidir1_per_dir_gbps"), d.get("raw_bidir4_per_dir_gbps")
    vals = d.get(name)
    if isinstance(vals, dict):
        vals = vals.get(str(d.get("headline_slice")))
    if not (isinstance(b1, list) and isinstance(vals, list)):
        return None
    if not isinstance(b4, list) or len(b4) != len(b1):
        b4 = b1
    out = []
    for p, r1, r4 in zip(vals, b1, b4):
        ref = max(r1, r4)
        if not isinstance(p, (int, float)) or not ref > 0:
            raise BadResult("%s: round figures are not positive numbers" % name)
        out.append(p / ref)
    return out


def read_result(path, keys, what):
    """The JSON object in path, which must have every key in keys."""
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise BadResult("cannot read it as JSON (%s)" % e)
    if not isinstance(d, dict):
        raise BadResult("not a JSON object")
    for k in keys:
        if k not in d:
            raise BadResult("no '%s': not a bench/rccl.sh %s result" % (k, what))
    return d


def load(path):
    d = read_result(path, ("timestamp", "ratio", "plugin_busbw_gbps"), "all-reduce")
    rr = d.get("ratio_per_round")
    if rr is None or "raw_bidir1_per_dir_gbps" not in d:
        return None  # an early run (2026-11-22): no per-round ratios
    if not isinstance(rr, list) or not rr or \
            not all(isinstance(x, (int, float)) and x > 0 for x in rr):
        raise BadResult("'ratio_per_round' is not a list of positive numbers")
    run = {
        "file": os.path.basename(path),
        "timestamp": str(d["timestamp"]),
        "ratio": d["ratio"],
        "rounds": len(rr),
        "per_round": [float(x) for x in rr],
        "transport_per_round": per_round(d, "plugin_noreduce_busbw_gbps"),
        "group": tuple(d.get(k, GROUP_DEFAULTS.get(k)) for k in GROUP_KEYS),
    }
    return run


def load_latency(path):
    d = read_result(path, ("timestamp", "sizes"), "latency")
    if not isinstance(d["sizes"], dict) or not d["sizes"]:
        raise BadResult("'sizes' is not an object of message sizes")
    sizes = {}
    for size, f in d["sizes"].items():
        if not size.isdigit() or not isinstance(f, dict):
            raise BadResult("size '%s': not a byte count with its figures" % size)
        out = {}
        for name, num, den, k in LAT_RATIOS:
            a, b = f.get(num), f.get(den)
            if a is None or b is None:
                continue  # a figure this run did not measure
            if not (isinstance(a, list) and isinstance(b, list) and a and len(a) == len(b)) or \
                    not all(isinstance(x, (int, float)) and x > 0 for x in a + b):
                raise BadResult("size %s: '%s' and '%s' are not equally long lists of positive "
                                "numbers" % (size, num, den))
            out[name] = [x / (k * y) for x, y in zip(a, b)]
        sizes[int(size)] = out
    return {"file": os.path.basename(path), "timestamp": str(d["timestamp"]), "sizes": sizes,
            "group": tuple(d.get(k, GROUP_DEFAULTS.get(k)) for k in LAT_GROUP_KEYS)}


def summary(values_per_run, target):
    """values_per_run: one list of per-round ratios per run."""
    rounds = [x for v in values_per_run for x in v]
    means = [statistics.mean(v) for v in values_per_run]
    s = {
        "runs": len(values_per_run),
        "rounds": len(rounds),
        "round_mean": statistics.mean(rounds),
        "round_median": statistics.median(rounds),
        "round_sd": statistics.stdev(rounds) if len(rounds) > 1 else 0.0,
        "run_mean": statistics.mean(means),
        "ci95": None,
    }
    if len(means) > 1:
        half = t95(len(means) - 1) * statistics.stdev(means) / math.sqrt(len(means))
        s["ci95"] = [s["run_mean"] - half, s["run_mean"] + half]
    if target is None:
        return s  # no target (latency): no count against it, no verdict
    s["rounds_at_target"] = sum(1 for x in rounds if x >= target)
    if s["ci95"] is None:
        s["verdict"] = "undecided"
    elif s["ci95"][0] >= target:
        s["verdict"] = "met"
    elif s["ci95"][1] < target:
        s["verdict"] = "not met"
    else:
        s["verdict"] = "undecided"
    return s


def fmt_group(g, keys=GROUP_KEYS):
    return ", ".join("%s %s" % (k, "?" if v is None else v) for k, v in zip(keys, g))


def fmt_lat_summary(what, s):
    ci = "n/a (one run)" if s["ci95"] is None else "%.2f .. %.2f" % tuple(s["ci95"])
    return ("%s: %d run(s), %d rounds; per round mean %.2f, median %.2f, sd %.2f; "
            "mean of the runs %.2f, 95 %% interval %s" % (what, s["runs"], s["rounds"],
                                                       s["round_mean"], s["round_median"],
                                                       s["round_sd"], s["run_mean"], ci))


def read_runs(a, kind, loader):
    """The runs of rccl-KIND-*.json in a.dir (or a.files) at or after
    a.since, oldest first, and how many the loader left out as early;
    (None, 0) after saying on stderr what was wrong."""
    files = a.files or sorted(glob.glob(os.path.join(a.dir, "rccl-%s-*.json" % kind)))
    if not files:
        print("rccl_history.py: no rccl-%s-*.json in %s" % (kind, a.dir), file=sys.stderr)
        return None, 0
    runs, bad, early = [], 0, 0
    for f in files:
        try:
            r = loader(f)
            if r is None:
                early += 1
            else:
                runs.append(r)
        except BadResult as e:
            print("rccl_history.py: %s: %s" % (f, e), file=sys.stderr)
            bad += 1
    if bad:
        return None, 0
    runs = sorted((r for r in runs if r["timestamp"] >= a.since), key=lambda r: r["timestamp"])
    if not runs:
        print("rccl_history.py: no run at or after %s" % a.since, file=sys.stderr)
        return None, 0
    return runs, early


def groups_of(runs, all_groups):
    """(configuration, its runs) for every configuration in runs, oldest
    first, or only for the newest run's."""
    groups = []
    for r in runs:
        if r["group"] not in groups:
            groups.append(r["group"])
    if not all_groups:
        groups = [runs[-1]["group"]]
    return [(g, [r for r in runs if r["group"] == g]) for g in groups]


def latency_main(a):
    runs, _ = read_runs(a, "latency", load_latency)
    if runs is None:
        return 1
    out = []
    for g, gr in groups_of(runs, a.all_groups):
        e = {"group": dict(zip(LAT_GROUP_KEYS, g)), "runs": [r["timestamp"] for r in gr],
             "sizes": {}}
        for size in sorted({z for r in gr for z in r["sizes"]}):
            e["sizes"][str(size)] = {}
            for name, _, _, _ in LAT_RATIOS:
                v = [r["sizes"][size][name] for r in gr
                     if size in r["sizes"] and name in r["sizes"][size]]
                if v:
                    e["sizes"][str(size)][name] = summary(v, None)
        out.append(e)
    if a.json:
        print(json.dumps({"groups": out}, indent=1))
        return 0
    for e in out:
        g = tuple(e["group"][k] for k in LAT_GROUP_KEYS)
        print("latency runs with %s" % fmt_group(g, LAT_GROUP_KEYS))
        print("  " + " ".join(e["runs"]))
        for size, per in e["sizes"].items():
            for name, s in per.items():
                print(fmt_lat_summary("%s B, %s" % (size, name), s))
    return 0


def fmt_summary(what, s, target):
    ci = "n/a (one run)" if s["ci95"] is None else "%.3f .. %.3f" % tuple(s["ci95"])
    return ("%s: %d run(s), %d rounds; per round mean %.3f, median %.3f, sd %.3f; "
            "%d of %d rounds >= %.2f\n  mean of the runs %.3f, 95 %% interval %s: "
            "target %.2f %s" % (what, s["runs"], s["rounds"], s["round_mean"],
                                 s["round_median"], s["round_sd"],
                                 s["rounds_at_target"], s["rounds"], target,
                                 s["run_mean"], ci, target, s["verdict"].upper()))


def main(argv):
    ap = argparse.ArgumentParser(description="pool bench/rccl.sh all-reduce runs")
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--target", type=float, default=0.9)
    ap.add_argument("--since", default="", help="only runs at or after this UTC stamp (20261125T19...)")
    ap.add_argument("--all-groups", action="store_true", help="every configuration, not only the newest run's")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--latency", action="store_true", help="pool the latency runs instead")
    ap.add_argument("files", nargs="*")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    if not 0 < a.target < 10:
        print("rccl_history.py: --target %s: want a ratio above 0 (0.9)" % a.target, file=sys.stderr)
        return 2
    if a.latency:
        return latency_main(a)
    runs, early = read_runs(a, "allreduce", load)
    if runs is None:
        return 1
    out = []
    for g, gr in groups_of(runs, a.all_groups):
        e = {"group": dict(zip(GROUP_KEYS, g)),
             "runs": [{"timestamp": r["timestamp"], "ratio": r["ratio"],
                       "per_round": r["per_round"]} for r in gr],
             "ratio": summary([r["per_round"] for r in gr], a.target)}
        tr = [r["transport_per_round"] for r in gr if r["transport_per_round"]]
        e["transport"] = summary(tr, a.target) if tr else None
        out.append(e)
    if a.json:
        print(json.dumps({"target": a.target, "groups": out,
                          "left_out_early": early}, indent=1))
        return 0
    if early:
        print("(%d early run(s) without per-round ratios left out)" % early)
    for e in out:
        g = tuple(e["group"][k] for k in GROUP_KEYS)
        print("runs with %s" % fmt_group(g))
        print("  " + " ".join("%s:%.2f" % (r["timestamp"], r["ratio"]) for r in e["runs"]))
        print(fmt_summary("all-reduce / bidirectional raw", e["ratio"], a.target))
        if e["transport"]:
            print(fmt_summary("transport (adds skipped) / bidirectional raw", e["transport"], a.target))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
