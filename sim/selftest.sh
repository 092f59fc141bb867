#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Integration check of sim/cable: start it, connect two fake model ends
# (Python), exchange HELLO/CTRL/DATA, plug/unplug over ctl.sock, check the
# status JSON, the trace, the capture (via odl-capture-dump) and a clean
# SIGTERM shutdown. Usage: SIM_CABLE=... SIM_CAPTURE_DUMP=... sim/selftest.sh
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
"$DUMP" "$D/cap.pcapng" >"$D/dump.txt"
cmp <(cut -d' ' -f2- "$D/dump.txt") <(cut -d' ' -f2- "$D/trace.txt") \
	|| { echo "selftest: capture dump differs from the trace"; diff <(cut -d' ' -f2- "$D/dump.txt") <(cut -d' ' -f2- "$D/trace.txt") | head; exit 1; }
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$D/cap.pcapng" -c 1 >/dev/null 2>&1 || { echo "selftest: tshark cannot read the capture"; exit 1; }
fi
echo "selftest: ok ($(wc -l <"$D/trace.txt") trace lines)"
