#!/usr/bin/env python3
"""Relay QMP commands from a guest of scripts/vm-run.sh --qmp to its QEMU.

Usage: vm-qmp.py QMP_SOCKET GUEST_SOCKET

Both are QEMU's listening Unix sockets: QMP_SOCKET its monitor,
GUEST_SOCKET the chardev of the guest's third serial port (ttyS2, which the
guest's init links to /dev/accel-qmp). The guest writes one QMP command a
line, as JSON; the relay sends it on the monitor and writes the reply back,
one line of JSON: {"return": ...} or {"error": ...}. Events are dropped.
Each command and reply is logged on stderr, so that the run's log shows
what the guest asked for. The relay ends when QEMU closes either socket.
"""
import json
import socket
import sys
import time


def connect(path, deadline):
    """QEMU's socket, once QEMU has created it."""
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def qmp_reply(qmp):
    """The next line from the monitor that is not an event."""
    while True:
        line = qmp.readline()
        if not line:
            raise EOFError("QMP closed")
        msg = json.loads(line)
        if "event" not in msg:
            return msg


def main():
    qmp_path, guest_path = sys.argv[1:3]
    deadline = time.monotonic() + 60
    qmp_sock = connect(qmp_path, deadline)
    guest_sock = connect(guest_path, deadline)
    qmp = qmp_sock.makefile("rw", encoding="utf-8", newline="\n")
    guest = guest_sock.makefile("rw", encoding="utf-8", newline="\n")
    qmp_reply(qmp)  # the greeting
    qmp.write('{"execute": "qmp_capabilities"}\n')
    qmp.flush()
    qmp_reply(qmp)
    for line in guest:
        line = line.strip()
        if not line:
            continue
        try:
            json.loads(line)
        except ValueError:
            reply = {"error": {"class": "GenericError",
                               "desc": "vm-qmp: not JSON: " + line}}
        else:
            qmp.write(line + "\n")
            qmp.flush()
            reply = qmp_reply(qmp)
        out = json.dumps(reply)
        print(f"vm-qmp: {line} -> {out}", file=sys.stderr, flush=True)
        guest.write(out + "\n")
        guest.flush()


if __name__ == "__main__":
    try:
        main()
    except (EOFError, OSError):
        pass
