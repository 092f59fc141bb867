#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of odl_tb5_rccl_stats --layout and --watch (make unit-rccl-stats).

A stats file is written by hand from the layout the tool prints; the tool
watches it while this script adds to its counters, and the changes it
reports must add up to exactly what was added, with rates that match its
own intervals. Bad arguments must exit 2, a missing or foreign file 1.

usage: stats_tool_check.py TOOL WORKDIR
"""
import ctypes
import json
import mmap
import os
import select
import signal
import subprocess
import sys
import time

TOOL, WORK = sys.argv[1], sys.argv[2]
DEADLINE = 120.0  # a loaded 2-core machine: conditions, generous bounds
n_ok = 0


def ok(msg):
    global n_ok
    n_ok += 1
    print("ok %d - %s" % (n_ok, msg))


def fail(msg):
    print("not ok %d - %s" % (n_ok + 1, msg))
    sys.exit(1)


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60)


# --- layout -----------------------------------------------------------
r = run("--layout")
if r.returncode != 0:
    fail("--layout exited %d: %s" % (r.returncode, r.stderr))
lay = json.loads(r.stdout)
fields, header, size = lay["fields"], lay["header"], lay["size"]
spans = sorted((f["offset"], f["offset"] + f["width"]) for f in list(fields.values()) + list(header.values()))
for (a0, a1), (b0, _) in zip(spans, spans[1:]):
    if a1 > b0:
        fail("layout: fields overlap at offset %d" % b0)
if spans[-1][1] > size or size != 328:
    fail("layout: size %d, last field ends at %d" % (size, spans[-1][1]))
for need in ("tx_bytes", "rx_bytes", "tx_msgs", "rx_msgs", "errors", "procs_attached"):
    if need not in fields:
        fail("layout: no field %s" % need)
ok("--layout: %d fields and %d header words inside %d bytes, none overlapping" % (len(fields), len(header), size))

# --- a stats file written from the layout ------------------------------
os.makedirs(WORK, exist_ok=True)
path = os.path.join(WORK, "watch_stats")
with open(path, "wb") as f:
    f.write(b"\0" * size)
fd = os.open(path, os.O_RDWR)
mm = mmap.mmap(fd, size)


def word(table, name):
    # one aligned store or load of the field's width (as the plugin's
    # atomics): the tool never sees half of a value
    f = table[name]
    t = ctypes.c_uint32 if f["width"] == 4 else ctypes.c_uint64
    return t.from_buffer(mm, f["offset"])


def put(table, name, value):
    word(table, name).value = value


def get(table, name):
    return word(table, name).value


put(header, "version", lay["version"])
put(header, "size", size)
put(header, "created_ns", time.clock_gettime_ns(time.CLOCK_REALTIME))
put(header, "magic", lay["magic"])
r = run("--json", path)
if r.returncode != 0 or json.loads(r.stdout)["tx_bytes"] != 0:
    fail("the tool does not read the file written from its layout: %d %s %s" % (r.returncode, r.stdout, r.stderr))
put(fields, "tx_bytes", 12345)
if json.loads(run("--json", path).stdout)["tx_bytes"] != 12345:
    fail("tx_bytes written at its layout offset is not what the tool reads")
ok("a file written from the layout reads back field by field")

# --- watch ----------------------------------------------------------------
p = subprocess.Popen([TOOL, "--watch", "0.2", "--json", path], stdout=subprocess.PIPE, text=True)
lines = []


def next_line():
    t0 = time.monotonic()
    while time.monotonic() - t0 < DEADLINE:
        rd, _, _ = select.select([p.stdout], [], [], 1.0)
        if rd:
            line = p.stdout.readline()
            if not line:
                fail("--watch ended early (exit %s)" % p.poll())
            lines.append(json.loads(line))
            return lines[-1]
    p.kill()
    fail("--watch printed nothing for %d s" % DEADLINE)


first = next_line()
if first["tx_bytes"] != 0 or first["tx_gbps"] != 0:
    fail("an interval in which nothing changed reports %s" % first)
ADD_TX, ADD_RX, ADD_ERR = 125000000, 5000, 3
put(fields, "tx_bytes", get(fields, "tx_bytes") + ADD_TX)
put(fields, "rx_bytes", get(fields, "rx_bytes") + ADD_RX)
put(fields, "errors", get(fields, "errors") + ADD_ERR)
put(fields, "procs_attached", 2)
while sum(l["tx_bytes"] for l in lines) < ADD_TX or lines[-1]["procs_attached"] != 2:
    next_line()
next_line()  # one more interval: nothing new in it
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=60)
if rc != 0:
    fail("--watch exited %d on SIGTERM" % rc)
sums = {k: sum(l[k] for l in lines) for k in ("tx_bytes", "rx_bytes", "errors", "inits")}
if sums != {"tx_bytes": ADD_TX, "rx_bytes": ADD_RX, "errors": ADD_ERR, "inits": 0}:
    fail("--watch changes add up to %s" % sums)
hit = [l for l in lines if l["tx_bytes"]]
if len(hit) != 1:
    fail("the change was reported in %d intervals" % len(hit))
h = hit[0]
want = h["tx_bytes"] * 8 / h["interval_s"] / 1e9
if abs(h["tx_gbps"] - want) > 1e-3 * want + 1e-6 or h["interval_s"] < 0.2:
    fail("tx_gbps %f for %d bytes in %.3f s (want %f)" % (h["tx_gbps"], h["tx_bytes"], h["interval_s"], want))
if lines[-1]["tx_bytes"] or lines[-1]["procs_attached"] != 2:
    fail("the interval after the change reports %s" % lines[-1])
ok("--watch: %d intervals; the changes add up to what was added (%d bytes at %.3f Gb/s in one interval), "
   "procs_attached shown as it is" % (len(lines), ADD_TX, h["tx_gbps"]))

r = run("--watch", "0.05", "--count", "2", path)
out = r.stdout.strip().split("\n")
if r.returncode != 0 or len(out) != 3 or not out[0].split()[0] == "time_s":
    fail("text --watch --count 2: exit %d, %r" % (r.returncode, r.stdout))
ok("text --watch --count 2: a header and two lines, then exit 0")

# --- refusals ------------------------------------------------------------
for args, code in ((["--watch", "0", path], 2), (["--watch", "x", path], 2),
                   (["--watch", "5000", path], 2), (["--watch", "1", "--count", "-1", path], 2),
                   (["--count", "3", path], 2), (["--bogus"], 2),
                   ([os.path.join(WORK, "missing")], 1)):
    r = run(*args)
    if r.returncode != code or not r.stderr.strip():
        fail("%s: exit %d (want %d), stderr %r" % (" ".join(args), r.returncode, code, r.stderr))
put(header, "magic", 1)
r = run(path)
if r.returncode != 1 or "not an odl_tb5" not in r.stderr:
    fail("a file with another magic: exit %d, %r" % (r.returncode, r.stderr))
ok("bad arguments exit 2 with a message; a missing file or one with another magic exits 1")
print("1..%d" % n_ok)
