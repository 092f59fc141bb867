# SPDX-License-Identifier: MIT
"""OdinLink agent protocol (see the header comment of harness/agent/odl-agent.c).

Frame: 16-byte header (u32 magic "ODL1", u8 type, u8 flags, u16 rsvd,
u32 channel, u32 length; little-endian) + payload.  The vmpair mux speaks
the same framing to its clients; it rewrites channel ids.
"""
import os
import select
import socket
import struct
import time

MAGIC = 0x314C444F
HDR = struct.Struct("<IBBHII")
HDR_LEN = HDR.size  # 16
MAX_PAYLOAD = 4 << 20
CHUNK = 64 * 1024

PING, EXEC, STDIN, KILL, PUT, PUTDATA, PUTEND, GET = 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08
PONG, STDOUT, STDERR, OK, ERROR, DATA, END, EXIT = 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88
OPENERS = (PING, EXEC, PUT, GET)
NAMES = {v: k for k, v in dict(PING=PING, EXEC=EXEC, STDIN=STDIN, KILL=KILL, PUT=PUT,
                               PUTDATA=PUTDATA, PUTEND=PUTEND, GET=GET, PONG=PONG,
                               STDOUT=STDOUT, STDERR=STDERR, OK=OK, ERROR=ERROR, DATA=DATA,
                               END=END, EXIT=EXIT).items()}


def frame(ftype, chan, payload=b""):
    return HDR.pack(MAGIC, ftype, 0, 0, chan, len(payload)) + payload


def fields(**kw):
    """Encode tag+NUL fields; list values repeat the tag."""
    out = bytearray()
    for tag, val in kw.items():
        vals = val if isinstance(val, (list, tuple)) else [val]
        for v in vals:
            if v is None:
                continue
            if isinstance(v, str):
                v = v.encode()
            out += tag.encode() + v + b"\0"
    return bytes(out)


class Parser:
    """Incremental frame parser with magic resync."""

    def __init__(self):
        self.buf = bytearray()
        self.skipped = 0

    def feed(self, data):
        self.buf += data
        out = []
        while True:
            if len(self.buf) < HDR_LEN:
                break
            magic, ftype, _fl, _rs, chan, ln = HDR.unpack_from(self.buf, 0)
            if magic != MAGIC or ln > MAX_PAYLOAD:
                i = self.buf.find(struct.pack("<I", MAGIC), 1)
                drop = i if i > 0 else max(1, len(self.buf) - 3)
                self.skipped += drop
                del self.buf[:drop]
                continue
            if len(self.buf) < HDR_LEN + ln:
                break
            payload = bytes(self.buf[HDR_LEN:HDR_LEN + ln])
            del self.buf[:HDR_LEN + ln]
            out.append((ftype, chan, payload))
        return out


class ProtoError(Exception):
    pass


class Client:
    """Blocking client of a vmpair mux socket (or of an agent directly)."""

    def __init__(self, path, connect_timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(connect_timeout)
        self.sock.connect(path)
        self.sock.settimeout(None)
        self.parser = Parser()
        self.pending = []
        self.next_chan = 1

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def new_chan(self):
        c = self.next_chan
        self.next_chan += 1
        return c

    def send(self, ftype, chan, payload=b""):
        self.sock.sendall(frame(ftype, chan, payload))

    def recv(self, timeout=None):
        """Next frame, or None on timeout (0 = poll).  Raises ProtoError on EOF."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return None
            data = self.sock.recv(256 * 1024)
            if not data:
                raise ProtoError("connection to the agent mux closed")
            self.pending.extend(self.parser.feed(data))
        return self.pending.pop(0)

    def recv_chan(self, chan, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            f = self.recv(left)
            if f is None:
                return None
            if f[1] == chan:
                return f

    # ---- simple operations ----
    def ping(self, timeout=5.0):
        ch = self.new_chan()
        self.send(PING, ch)
        f = self.recv_chan(ch, timeout)
        if f is None:
            return None
        if f[0] != PONG:
            raise ProtoError(f[2].decode(errors="replace"))
        info = {}
        for kv in f[2].decode(errors="replace").split():
            k, _, v = kv.partition("=")
            info[k] = v
        return info

    def put(self, local_fileobj, remote, mode=0o644, timeout=None):
        ch = self.new_chan()
        self.send(PUT, ch, fields(p=remote, m="%o" % mode))
        total = 0
        while True:
            data = local_fileobj.read(CHUNK)
            if not data:
                break
            self.send(PUTDATA, ch, data)
            total += len(data)
            # an early error (e.g. open failed) ends the transfer
            while True:
                f = self.recv(0)
                if f is None:
                    break
                if f[1] == ch and f[0] == ERROR:
                    raise ProtoError(f[2].decode(errors="replace"))
        self.send(PUTEND, ch)
        f = self.recv_chan(ch, timeout)
        if f is None:
            raise ProtoError("timeout waiting for PUT result")
        if f[0] != OK:
            raise ProtoError(f[2].decode(errors="replace"))
        return total

    def get(self, remote, out_fileobj, timeout=None):
        ch = self.new_chan()
        self.send(GET, ch, remote.encode())
        total = 0
        while True:
            f = self.recv_chan(ch, timeout)
            if f is None:
                raise ProtoError("timeout during GET")
            if f[0] == DATA:
                out_fileobj.write(f[2])
                total += len(f[2])
            elif f[0] == END:
                return total
            elif f[0] == ERROR:
                raise ProtoError(f[2].decode(errors="replace"))

    def run(self, argv, timeout=None, stdin_data=None, env=None, cwd=None):
        """Run argv, collect output.  Returns (status, stdout, stderr);
        status is the exit code, 128+signal, 124 on timeout, 127 if the
        program could not be started (message in stderr)."""
        ch = self.new_chan()
        self.send(EXEC, ch, fields(a=list(argv), e=list(env or []), c=cwd,
                                   i="" if stdin_data is not None else None))
        if stdin_data is not None:
            for i in range(0, len(stdin_data), CHUNK):
                self.send(STDIN, ch, stdin_data[i:i + CHUNK])
            self.send(STDIN, ch, b"")
        out, err = bytearray(), bytearray()
        deadline = None if timeout is None else time.monotonic() + timeout
        killed = False
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                if not killed:
                    self.send(KILL, ch, struct.pack("<I", 9))
                    killed = True
                    deadline = time.monotonic() + 10
                    continue
                return 124, bytes(out), bytes(err)
            f = self.recv_chan(ch, left)
            if f is None:
                continue
            t, _, p = f
            if t == STDOUT:
                out += p
            elif t == STDERR:
                err += p
            elif t == ERROR:
                if killed:
                    continue
                return 127, bytes(out), bytes(err) + p + b"\n"
            elif t == EXIT:
                if killed:
                    return 124, bytes(out), bytes(err)
                return exit_code(p), bytes(out), bytes(err)


def exit_code(payload):
    (st,) = struct.unpack("<i", payload[:4])
    return 128 - st if st < 0 else st
