#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration check of sim/cable: start it, connect two fake model ends
# (Python), exchange HELLO/CTRL/DATA, plug/unplug and fault injection over
# ctl.sock, check the status JSON, the trace, the capture (via
# odl-capture-dump) and a clean SIGTERM shutdown.
# Usage: SIM_CABLE=... SIM_CAPTURE_DUMP=... sim/selftest.sh
# SELFTEST_KEEP_CAPTURE=FILE keeps the capture (and FILE.trace), for
# sim/capture-check.sh.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CABLE=${SIM_CABLE:-$HERE/../build/sim/cable}
DUMP=${SIM_CAPTURE_DUMP:-$HERE/../build/sim/odl-capture-dump}
command -v python3 >/dev/null || { echo "selftest: SKIP (no python3)"; exit 0; }

D=$(mktemp -d /tmp/odl-cable-selftest.XXXXXX)
PID=
cleanup() {
	if [[ -n "$PID" ]] && kill -0 "$PID" 2>/dev/null; then kill "$PID"; wait "$PID" || true; fi
	rm -rf "$D"
}
trap cleanup EXIT

"$CABLE" --dir "$D" --trace "$D/trace.txt" --capture "$D/cap.pcapng" \
	--latency-us 50 2>"$D/cable.log" &
PID=$!
for _ in $(seq 100); do [[ -s "$D/cable.pid" ]] && break; sleep 0.05; done
[[ -s "$D/cable.pid" ]] || { echo "selftest: cable did not start"; cat "$D/cable.log"; exit 1; }
[[ $(cat "$D/cable.pid") == "$PID" ]] || { echo "selftest: bad pid file"; exit 1; }

python3 - "$D" <<'PY'
import json, socket, struct, sys, time
D = sys.argv[1]
MAGIC, HELLO, STATE, CTRL, DATA, CREDIT, LANE = 0x4b4c444f, 1, 2, 3, 4, 5, 6

def msg(t, body):
    return struct.pack('<IHH', len(body), t, 0) + body

def hello(uid, lanes=2, gbps=40, profile=b'selftest', magic=MAGIC):
    return msg(HELLO, struct.pack('<IHHQII32s', magic, 1, lanes, uid, gbps, 0, profile))

class End:
    def __init__(self, name):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(f'{D}/end-{name}.sock')
        self.s.settimeout(5)
        self.buf = b''
    def send(self, b):
        self.s.sendall(b)
    def recv_msg(self, timeout=5):
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 8:
                ln, t, _ = struct.unpack('<IHH', self.buf[:8])
                if len(self.buf) >= 8 + ln:
                    m, self.buf = self.buf[:8 + ln], self.buf[8 + ln:]
                    return t, m[8:], m
            d = self.s.recv(65536)
            if not d:
                return None
            self.buf += d
    def state(self):
        r = self.recv_msg()
        assert r is not None and r[0] == STATE, r
        up, lanes, _, gbps, peer = struct.unpack('<BBHIQ', r[1])
        return up, lanes, gbps, peer
    def nothing(self, t=0.2):
        try:
            r = self.recv_msg(timeout=t)
        except socket.timeout:
            return True
        raise AssertionError(f'unexpected {r}')

def ctl(*cmds):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(f'{D}/ctl.sock')
    s.sendall(''.join(c + '\n' for c in cmds).encode())
    s.settimeout(5)
    out = b''
    while out.count(b'\n') < len(cmds):
        d = s.recv(65536)
        assert d, 'ctl closed early'
        out += d
    s.close()
    return out.decode().splitlines()

READ = bytes.fromhex('00000000000000000400 20002fc967ac'.replace(' ', ''))
ctrl = msg(CTRL, bytes([1, 0, 0, 0]) + READ)

a = End('a'); a.send(hello(0x1111, profile=b'generic-usb4'))
assert a.state() == (0, 0, 0, 0)
b = End('b'); b.send(hello(0x2222, lanes=1, gbps=20))
assert b.state() == (1, 1, 20, 0x1111)
assert a.state() == (1, 1, 20, 0x2222)

# a second connection to a busy end is refused
x = End('a')
assert x.recv_msg() is None

a.send(ctrl)
t, body, raw = b.recv_msg()
assert t == CTRL and raw == ctrl, raw
payload = bytes(range(64))
data = msg(DATA, struct.pack('<HBBHH', 8, 1, 2, 0, 0) + payload)
b.send(data + msg(CREDIT, struct.pack('<HH', 8, 4)))
assert a.recv_msg()[2] == data
assert a.recv_msg()[0] == CREDIT

st = json.loads(ctl('status')[0])
assert st['plugged'] and st['link_up'], st
assert st['ends']['a']['connected'] and st['ends']['a']['uid'] == '0x0000000000001111'
assert st['ends']['a']['profile'] == 'generic-usb4'
assert st['ends']['a']['tx_msgs'] == 2 and st['ends']['b']['tx_msgs'] == 3, st
assert st['lanes'] == 1 and st['lane_gbps'] == 20 and st['plug_count'] == 0, st

# unplug: STATE down to both, traffic dropped and counted
assert ctl('unplug') == ['ok']
assert a.state()[0] == 0 and b.state()[0] == 0
a.send(data)
b.nothing()
st = json.loads(ctl('status')[0])
assert not st['plugged'] and not st['link_up'] and st['ends']['a']['dropped'] == 1, st

# several commands on one connection, unknown command
r = ctl('plug', 'trace on', 'bogus thing', 'status')
assert r[0] == 'ok' and r[1] == 'ok', r
assert r[2] == "error: unknown command 'bogus thing'", r
st = json.loads(r[3])
assert st['link_up'] and st['plug_count'] == 1, st
assert a.state()[0] == 1 and b.state()[0] == 1

# b restarts with a bad HELLO: closed, a sees the link go down
b.s.close()
assert a.state()[0] == 0
bad = End('b'); bad.send(hello(0x3333, magic=0xdeadbeef))
assert bad.recv_msg() is None
# oversized message after a good HELLO: closed
big = End('b'); big.send(hello(0x4444))
assert big.state()[0] == 1 and a.state()[3] == 0x4444
big.send(struct.pack('<IHH', 100000, DATA, 0))
assert big.recv_msg() is None
assert a.state()[0] == 0
# b comes back properly
b = End('b'); b.send(hello(0x5555))
assert b.state() == (1, 2, 40, 0x1111)
assert a.state() == (1, 2, 40, 0x5555)
a.send(ctrl)
assert b.recv_msg()[2] == ctrl
st = json.loads(ctl('status')[0])
assert st['ends']['b']['uid'] == '0x0000000000005555' and st['ends']['b']['connects'] == 4, st

# latency is honoured (50 us configured): the round trip is not instant
# but is also not blocked; bulk transfer keeps order
n = 200
for i in range(n):
    a.send(msg(DATA, struct.pack('<HBBHH', 8, 0, 0, 0, 0) + struct.pack('<I', i) + bytes(1000)))
for i in range(n):
    t, body, _ = b.recv_msg()
    assert t == DATA and struct.unpack('<I', body[8:12])[0] == i

# ---- fault injection through ctl.sock (docs/link-protocol.md section 6)
def frame(hop, i, flags=0):
    return msg(DATA, struct.pack('<HBBHH', hop, 1, 2, flags, 0) + struct.pack('<I', i) + bytes(range(12)))
def data_idx(m):
    t, body, _ = m
    assert t == DATA, m
    hop, sof, eof, flags, _ = struct.unpack('<HBBHH', body[:8])
    return hop, struct.unpack('<I', body[8:12])[0], flags, body[8:]

assert ctl('fault seed 7') == ['ok seed=7']
assert ctl('fault drop hop=8 nth=2') == ['ok #1 drop hop=8 dir=both nth=2']
# rules apply in order; the frame #1 drops is not seen by #2, so #2's 2nd is frame 3
r = ctl('fault corrupt hop=8 dir=a2b nth=2 bit=0', 'fault withhold-credits hop=8 count=1',
        'fault bogus', 'fault drop hop=8 nth=0')
assert r[0] == 'ok #2 corrupt hop=8 dir=a2b nth=2 bit=0', r
assert r[1] == 'ok #3 withhold-credits hop=8 dir=both count=1', r
assert r[2].startswith("error: fault 'bogus'? expected"), r
assert r[3] == "error: fault drop: bad nth '0'", r
for i in range(1, 5):
    a.send(frame(8, i))
got = [data_idx(b.recv_msg()) for _ in range(3)]
assert [g[1] for g in got] == [1, 3 ^ 1, 4], got      # 2 dropped, 3 has bit 0 flipped
assert [g[2] for g in got] == [0, 1, 0], got          # and CRC_ERR set
b.send(msg(CREDIT, struct.pack('<HH', 8, 4)) + msg(CREDIT, struct.pack('<HH', 8, 5)))
t, body, _ = a.recv_msg()
assert t == CREDIT and struct.unpack('<HH', body) == (8, 5), body   # the first was withheld
b.nothing()
st = json.loads(ctl('status')[0])
f = st['faults']
assert f['seed'] == 7 and f['dropped'] == 1 and f['corrupted'] == 1 and f['credits_withheld'] == 1, f
assert [x['hits_total'] for x in f['active']] == [1, 1, 1], f
lst = ctl('fault list')[0]
assert lst.startswith('ok seed=7 faults=3; #1 drop hop=8 dir=both nth=2 hits=1'), lst

# retrain to 1 x 10 Gb/s: both ends see the link go down and come back slower
assert ctl('fault retrain lanes=1 gbps=10') == ['ok link 1 x 10 Gb/s']
assert a.state() == (0, 0, 0, 0) and a.state() == (1, 1, 10, 0x5555)
assert b.state() == (0, 0, 0, 0) and b.state() == (1, 1, 10, 0x1111)
assert json.loads(ctl('status')[0])['lane_gbps'] == 10

# unplug after 2 more frames (mid-transfer), replugged by hand
assert ctl('fault clear', 'fault unplug-after frames=2') == ['ok', 'ok #4 unplug-after hop=any dir=both frames=2']
# one write: all five are on the wire (in flight) before the second is
# delivered, so the unplug discards the last three as in-flight, however
# slowly this script runs
a.send(b''.join(frame(9, i) for i in range(10, 15)))
assert [data_idx(b.recv_msg())[1] for _ in range(2)] == [10, 11]
assert b.state()[0] == 0 and a.state()[0] == 0
st = json.loads(ctl('status')[0])
assert not st['plugged'] and st['faults']['unplugs'] == 1 and st['faults']['active'][0]['done'], st
assert ctl('plug', 'fault clear', 'fault list') == ['ok', 'ok', 'ok seed=7 faults=0']
assert a.state()[:3] == (1, 2, 40) and b.state()[:3] == (1, 2, 40)   # cap gone at the new training
a.send(frame(8, 77))
assert data_idx(b.recv_msg())[1] == 77
# the cable's timers: a replug after unplug-after, a retrain's down time
assert ctl('fault unplug-after frames=1 dir=b2a replug_ms=50')[0].startswith('ok #5')
t0 = time.monotonic()
b.send(frame(8, 78))
assert data_idx(a.recv_msg())[1] == 78
assert a.state()[0] == 0 and a.state()[0] == 1 and b.state()[0] == 0 and b.state()[0] == 1
assert time.monotonic() - t0 >= 0.05
assert ctl('fault retrain lanes=2 gbps=20 down_us=20000') == ['ok retraining (down for 20000 us)']
assert a.state()[0] == 0 and a.state()[:3] == (1, 2, 20)
assert b.state()[0] == 0 and b.state()[:3] == (1, 2, 20)
assert ctl('fault clear') == ['ok']
print('selftest: python checks passed')
PY

kill -TERM "$PID"
wait "$PID"; rc=$?
PID=
[[ $rc == 0 ]] || { echo "selftest: cable exit status $rc"; exit 1; }
for f in end-a.sock end-b.sock ctl.sock cable.pid; do
	[[ ! -e "$D/$f" ]] || { echo "selftest: $f left behind"; exit 1; }
done
grep -q 'a->b     CTRL READ route=0x0 space=router port=0 offset=0x0 len=1 seq=0 crc=ok' "$D/trace.txt" \
	|| { echo "selftest: trace lacks the CTRL line"; head -20 "$D/trace.txt"; exit 1; }
grep -q 'cable->a STATE up=1 lanes=1 lane_gbps=20 peer_uid=0x0000000000002222' "$D/trace.txt" \
	|| { echo "selftest: trace lacks STATE"; exit 1; }
grep -q 'DROP(link-down) DATA hop=8' "$D/trace.txt" || { echo "selftest: trace lacks the drop"; exit 1; }
for want in 'DROP(fault) DATA hop=8' 'FAULT(corrupt) DATA hop=8 sof=1 eof=2 len=16 crc_err' \
	'DROP(fault) CREDIT hop=8 credits=4' 'DROP(in-flight) DATA hop=9'; do
	grep -qF "$want" "$D/trace.txt" || { echo "selftest: trace lacks '$want'"; exit 1; }
done
"$DUMP" "$D/cap.pcapng" >"$D/dump.txt"
cmp <(cut -d' ' -f2- "$D/dump.txt") <(cut -d' ' -f2- "$D/trace.txt") \
	|| { echo "selftest: capture dump differs from the trace"; diff <(cut -d' ' -f2- "$D/dump.txt") <(cut -d' ' -f2- "$D/trace.txt") | head; exit 1; }
if [[ -n "${SELFTEST_KEEP_CAPTURE:-}" ]]; then
	cp "$D/cap.pcapng" "$SELFTEST_KEEP_CAPTURE"
	cp "$D/trace.txt" "$SELFTEST_KEEP_CAPTURE.trace"
fi
echo "selftest: ok ($(wc -l <"$D/trace.txt") trace lines)"
