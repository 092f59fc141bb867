#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check netconf --bench --timeline output (stdin) against the all-reduce's
dependencies: per rank and timed iteration one send, recv and reduced line;
completions seen in order; reduce-scatter slice j reduced only after it was
received; all-gather slice j sent only after reduce-scatter slice j was
reduced.  Usage: timeline_check.py RANKS ITERS SLICES_PER_PHASE < output"""
import re
import sys

ranks, iters, ns = (int(v) for v in sys.argv[1:4])
tl = {}
for line in sys.stdin:
    m = re.match(r"# timeline rank(\d+) (\d+) (send|recv|reduced) ms:(.*)$", line)
    if m:
        key = (int(m.group(1)), int(m.group(2)), m.group(3))
        if key in tl:
            sys.exit("timeline_check: %s printed twice" % (key,))
        tl[key] = [float(v) for v in m.group(4).split()]
errs = []
for r in range(ranks):
    for it in range(iters):
        got = {k: tl.get((r, it, k)) for k in ("send", "recv", "reduced")}
        if any(v is None for v in got.values()):
            errs.append("rank%d iteration %d: lines missing" % (r, it))
            continue
        s, rv, red = got["send"], got["recv"], got["reduced"]
        if len(s) != 2 * ns or len(rv) != 2 * ns or len(red) != ns:
            errs.append("rank%d iteration %d: %d/%d/%d values, want %d/%d/%d"
                        % (r, it, len(s), len(rv), len(red), 2 * ns, 2 * ns, ns))
            continue
        for name, v in (("send", s), ("recv", rv), ("reduced", red)):
            if any(b < a for a, b in zip(v, v[1:])) or v[0] < 0:
                errs.append("rank%d iteration %d: %s not in order: %s" % (r, it, name, v))
        for j in range(ns):
            if red[j] < rv[j]:
                errs.append("rank%d iteration %d: slice %d reduced (%.1f) before received (%.1f)"
                            % (r, it, j, red[j], rv[j]))
            if s[ns + j] < red[j]:
                errs.append("rank%d iteration %d: all-gather slice %d sent (%.1f) before reduced (%.1f)"
                            % (r, it, j, s[ns + j], red[j]))
if errs:
    sys.exit("timeline_check: " + "\n".join(errs))
print("ok - timeline: %d ranks x %d iterations, %d slices per phase, dependencies kept"
      % (ranks, iters, ns))
