#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check netconf --bench --timeline output (stdin) against the all-reduce's
dependencies: per rank, timed iteration and channel one send, recv and
reduced line; completions seen in order; reduce-scatter slice j reduced only
after it was received; all-gather slice j sent only after reduce-scatter
slice j was reduced; the channels' slices per phase add up.
Usage: timeline_check.py RANKS ITERS CHANNELS SLICES_PER_PHASE < output
(SLICES_PER_PHASE: of all channels together)"""
import re
import sys

ranks, iters, nch, ns_total = (int(v) for v in sys.argv[1:5])
tl = {}
for line in sys.stdin:
    m = re.match(r"# timeline rank(\d+) (\d+) c(\d+) (send|recv|reduced) ms:(.*)$", line)
    if m:
        key = (int(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))
        if key in tl:
            sys.exit("timeline_check: %s printed twice" % (key,))
        tl[key] = [float(v) for v in m.group(5).split()]
if any(k[2] >= nch for k in tl):
    sys.exit("timeline_check: a channel beyond %d" % nch)
errs = []
for r in range(ranks):
    for it in range(iters):
        total = 0
        for c in range(nch):
            where = "rank%d iteration %d channel %d" % (r, it, c)
            got = {k: tl.get((r, it, c, k)) for k in ("send", "recv", "reduced")}
            if any(v is None for v in got.values()):
                errs.append(where + ": lines missing")
                continue
            s, rv, red = got["send"], got["recv"], got["reduced"]
            ns = len(red)
            total += ns
            if not ns or len(s) != 2 * ns or len(rv) != 2 * ns:
                errs.append("%s: %d/%d/%d values, want 2n/2n/n, n > 0"
                            % (where, len(s), len(rv), len(red)))
                continue
            for name, v in (("send", s), ("recv", rv), ("reduced", red)):
                if any(b < a for a, b in zip(v, v[1:])) or v[0] < 0:
                    errs.append("%s: %s not in order: %s" % (where, name, v))
            for j in range(ns):
                if red[j] < rv[j]:
                    errs.append("%s: slice %d reduced (%.1f) before received (%.1f)"
                                % (where, j, red[j], rv[j]))
                if s[ns + j] < red[j]:
                    errs.append("%s: all-gather slice %d sent (%.1f) before reduced (%.1f)"
                                % (where, j, s[ns + j], red[j]))
        if total != ns_total:
            errs.append("rank%d iteration %d: %d slices per phase over the channels, want %d"
                        % (r, it, total, ns_total))
if errs:
    sys.exit("timeline_check: " + "\n".join(errs))
print("ok - timeline: %d ranks x %d iterations x %d channels, %d slices per phase, dependencies kept"
      % (ranks, iters, nch, ns_total))
