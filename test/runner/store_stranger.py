"""Another user's process against a job's rendezvous store (HOST:PORT):
what it tries must all be refused, while the job runs on.

  store_stranger.py HOST:PORT [SECRET]

Without the secret: a request where the proof belongs, a proof made with
another secret, random bytes, a huge length prefix, a truncated proof, and
1,000 connections held idle for a second. Each must be closed having been
sent nothing but the challenge. With SECRET (read by the test from a rank's
environment, as only the job's own user can): the same exchange is served,
which shows that the refusals came from the secret alone.

Prints one line per check ("ok ..." or "FAILED ...") and exits 1 if any
failed. Standard library only: the stranger needs no horovodcpp.
"""
import hashlib
import hmac
import os
import socket
import struct
import sys
import time

CHALLENGE = 40  # "hvdauth1" + 32-byte nonce
PROOF = 64  # caller nonce + HMAC
failures = []


def check(ok, what):
    print(("ok " if ok else "FAILED ") + what, flush=True)
    if not ok:
        failures.append(what)


def connect(address):
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=5)
    s.settimeout(5)
    return s


def read_until_closed(s, limit=1 << 20):
    """What the server sends until it closes the connection (None: it kept it open)."""
    got = b""
    try:
        while len(got) < limit:
            chunk = s.recv(65536)
            if not chunk:
                return got
            got += chunk
    except ConnectionResetError:
        return got
    except socket.timeout:
        return None
    return got


def read_exactly(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            break
        got += chunk
    return got


def proof(secret, challenge):
    nonce = os.urandom(32)
    mac = hmac.new(secret, b"caller" + challenge[8:] + nonce, hashlib.sha256).digest()
    return nonce + mac


def get_request(key):
    return bytes([2]) + struct.pack(">IQ", len(key), 0) + key


def refused(address, payload, what):
    s = connect(address)
    s.sendall(payload)
    got = read_until_closed(s)
    s.close()
    check(got is not None and len(got) == CHALLENGE and got.startswith(b"hvdauth1"),
          what + ": closed after the challenge alone (got %s)" %
          ("no close" if got is None else "%d bytes" % len(got)))


def main():
    address = sys.argv[1]
    if len(sys.argv) > 2:
        secret = sys.argv[2].encode()
        s = connect(address)
        challenge = read_exactly(s, CHALLENGE)
        s.sendall(proof(secret, challenge))
        reply = read_exactly(s, 32)
        s.sendall(get_request(b"hvdrun/failure/1"))
        status = read_exactly(s, 9)
        s.close()
        check(len(reply) == 32 and len(status) == 9 and status[0] == 1,
              "with the job's secret: served (a GET answered NOT_FOUND)")
        return 1 if failures else 0

    padded = get_request(b"hvdrun/pid/0").ljust(PROOF, b"\0")
    refused(address, padded, "a GET where the proof belongs")
    s = connect(address)
    challenge = read_exactly(s, CHALLENGE)
    s.sendall(proof(b"another job's secret", challenge))
    got = read_until_closed(s)
    s.close()
    check(got == b"", "a proof made with another secret: closed without the reply")
    refused(address, os.urandom(10000), "10,000 random bytes")
    refused(address, bytes([1]) + struct.pack(">IQ", 0xFFFFFFFF, 2**64 - 1) + b"x" * 51,
            "a SET with huge length prefixes")
    s = connect(address)
    s.sendall(b"p" * 20)  # a truncated proof, then the connection closes
    s.close()
    idle = []
    for _ in range(1000):
        try:
            idle.append(connect(address))
        except OSError:
            break
    check(len(idle) == 1000, "1,000 idle connections opened (%d)" % len(idle))
    time.sleep(1)
    for s in idle:
        s.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
