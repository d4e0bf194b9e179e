#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""A direct ssh-agent protocol client for tests and benchmarks, written from
the draft (draft-miller-ssh-agent), independent of the agent's own code.

  agent_client.py SOCK list                 key count and comments
  agent_client.py SOCK keyhash PUBFILE      SHA-256 of the key's scalar (test hook)
  agent_client.py SOCK add-truncated HEX PUBFILE
                                            send an ADD of the key with scalar HEX,
                                            cut off before its comment, then leave
  agent_client.py SOCK hostile              a series of malformed clients, one after
                                            another; each must get a failure or a
                                            closed connection, never a hang
  agent_client.py SOCK stall                start a message and stop: the agent must
                                            hang up (prints the seconds it took)
  agent_client.py SOCK bench PUBFILE SECONDS  sign requests; prints signatures/s
  agent_client.py proxy LISTEN TARGET RECORD  forward connections one at a time,
                                            appending connection N's bytes (both
                                            directions) to RECORD.N; ends after 600 s
Exit status 0 on success, 1 when the agent misbehaved, 2 on usage errors.
"""
import base64, hashlib, os, select, socket, struct, sys, time

FAILURE, SUCCESS, IDENTITIES, IDS_ANSWER, SIGN, SIGN_RESPONSE = 5, 6, 11, 12, 13, 14
ADD, REMOVE, REMOVE_ALL, LOCK, UNLOCK, ADD_CONSTRAINED = 17, 18, 19, 22, 23, 25
EXTENSION, EXT_FAILURE, EXT_RESPONSE = 27, 28, 29
# How long the agent may take to answer or hang up: a minute, or less where
# the tests' own guest timeout is shorter (the mutation target's 20 s).
TIMEOUT = min(60, int(os.environ.get("CLOAK_TEST_TIMEOUT") or 60))


def s(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack(">I", len(b)) + b


def mpint(d):
    v = d.lstrip(b"\0")
    if v and v[0] & 0x80:
        v = b"\0" + v
    return s(v)


def frame(body):
    return struct.pack(">I", len(body)) + body


def connect(path):
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(TIMEOUT)
    c.connect(path)
    return c


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        x = c.recv(n - len(b))
        if not x:
            raise EOFError("closed after %d of %d bytes" % (len(b), n))
        b += x
    return b


def reply(c):
    n = struct.unpack(">I", recv_exact(c, 4))[0]
    return recv_exact(c, n)


def call(c, body):
    c.sendall(frame(body))
    return reply(c)


def closed(c, within=TIMEOUT):
    """True if the agent closes the connection (end-of-file) in time."""
    c.settimeout(within)
    try:
        return c.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def pub_blob(path):
    return base64.b64decode(open(path).read().split()[1])


def strings(b):
    out, i = [], 0
    while i < len(b):
        n = struct.unpack_from(">I", b, i)[0]
        out.append(b[i + 4:i + 4 + n])
        i += 4 + n
    return out


def list_keys(path):
    r = call(connect(path), bytes([IDENTITIES]))
    if r[0] != IDS_ANSWER:
        sys.exit("list: reply type %d" % r[0])
    n = struct.unpack_from(">I", r, 1)[0]
    fields = strings(r[5:])
    print("%d keys: %s" % (n, " ".join(f.decode() for f in fields[1::2])))


def keyhash(path, pub):
    r = call(connect(path), bytes([EXTENSION]) + s("keyhash@cloak") + s(pub_blob(pub)))
    if r[0] != EXT_RESPONSE:
        sys.exit("keyhash: refused (reply type %d): is the agent running with --test-hooks?" % r[0])
    name, h = strings(r[1:])
    print(h.hex())


def add_body(scalar, point, comment=b"c", constraints=b"", t=ADD, raw_mpint=None):
    m = mpint(scalar) if raw_mpint is None else s(raw_mpint)
    return (bytes([t]) + s("ecdsa-sha2-nistp256") + s("nistp256") + s(point) + m +
            s(comment) + constraints)


def point_of(pub):
    return strings(pub_blob(pub))[2]


def add_truncated(path, hexscalar, pub):
    body = add_body(bytes.fromhex(hexscalar), point_of(pub), b"x" * 64)
    c = connect(path)
    c.sendall(frame(body)[:-40])  # the scalar is in, the comment is not
    time.sleep(0.5)
    c.close()
    print("sent %d of %d bytes, then left" % (len(frame(body)) - 40, len(frame(body))))


ORDER = bytes.fromhex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")


def hostile(path):
    """Each case: (name, bytes to send, expected). Expected is a reply
    type, or "closed". Cases run one after another, each on its own
    connection, so one that hangs the agent fails all the rest."""
    g = bytes.fromhex("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                      "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
    one = b"\0" * 31 + b"\1"  # the scalar 1, whose public key is G
    ids = bytes([IDENTITIES])
    cases = [
        ("zero-length frame", struct.pack(">I", 0), "closed"),
        ("frame longer than the agent takes", struct.pack(">I", 0x7fffffff) + b"\x0b" * 100, "closed"),
        ("frame length 2^32-1", b"\xff\xff\xff\xff", "closed"),
        ("unknown message type", frame(bytes([200])), FAILURE),
        ("SSH1 and smartcard messages", frame(bytes([1])) + frame(bytes([20]) + s("p") + s("")) +
         frame(bytes([24])) + frame(bytes([26])) + frame(bytes([9])), [FAILURE] * 5),
        ("request identities with trailing bytes", frame(ids + b"junk"), FAILURE),
        ("sign request, key blob longer than the message", frame(bytes([SIGN]) + struct.pack(">I", 1000) + b"ab"), FAILURE),
        ("sign request, string length 2^32-1", frame(bytes([SIGN]) + b"\xff\xff\xff\xff" + b"x" * 8), FAILURE),
        ("sign request, no flags", frame(bytes([SIGN]) + s(b"blob") + s(b"data")), FAILURE),
        ("sign request for a key the agent lacks", frame(bytes([SIGN]) + s(s("ecdsa-sha2-nistp256") + s("nistp256") + s(g)) + s(b"d") + b"\0\0\0\0"), FAILURE),
        ("add, unknown key type", frame(bytes([ADD]) + s("ssh-foo") + s(b"x") * 3), FAILURE),
        ("add, RSA key of 512 bits", frame(bytes([ADD]) + s("ssh-rsa") + mpint(b"\x01" * 64) * 6 + s("c")), FAILURE),
        ("add, wrong curve", frame(add_body(one, g).replace(b"nistp256", b"nistp384", 1)), FAILURE),
        ("add, point without 04 prefix", frame(add_body(one, b"\x05" + g[1:])), FAILURE),
        ("add, scalar 0", frame(add_body(b"\0", g)), FAILURE),
        ("add, scalar n (the group order)", frame(add_body(ORDER, g)), FAILURE),
        ("add, negative scalar", frame(add_body(b"", g, raw_mpint=b"\x80\x01")), FAILURE),
        ("add, scalar with a superfluous leading zero", frame(add_body(b"", g, raw_mpint=b"\0\x01")), FAILURE),
        ("add, scalar of 33 bytes", frame(add_body(b"\x01" * 33, g)), FAILURE),
        ("add, comment longer than 1024 bytes", frame(add_body(one, g, b"c" * 1025)), FAILURE),
        ("add, unknown constraint", frame(add_body(one, g, constraints=b"\x4d", t=ADD_CONSTRAINED)), FAILURE),
        ("add, lifetime constraint cut short", frame(add_body(one, g, constraints=b"\x01\0\0", t=ADD_CONSTRAINED)), FAILURE),
        ("add, confirm constraint", frame(add_body(one, g, constraints=b"\x02", t=ADD_CONSTRAINED)), FAILURE),
        ("add, extension constraint", frame(add_body(one, g, constraints=b"\xff" + s("restrict-destination-v00@openssh.com") + s(b""), t=ADD_CONSTRAINED)), FAILURE),
        ("add, scalar that does not match the point", frame(add_body(b"\0" * 31 + b"\2", g)), FAILURE),
        ("remove, malformed blob", frame(bytes([REMOVE]) + s(b"\0\0\0\x05abc")), FAILURE),
        ("lock passphrase longer than 1024 bytes", frame(bytes([LOCK]) + s(b"p" * 1025)), FAILURE),
        ("unlock while not locked", frame(bytes([UNLOCK]) + s(b"p")), FAILURE),
        ("unknown extension", frame(bytes([EXTENSION]) + s("session-bind@openssh.com") + s(b"x")), FAILURE),
        ("test hook without --test-hooks", frame(bytes([EXTENSION]) + s("keyhash@cloak") + s(b"x")), FAILURE),
        ("extension without a name", frame(bytes([EXTENSION]) + b"\0\0"), FAILURE),
        ("keygen, unknown key type", frame(bytes([EXTENSION]) + s("keygen@cloak") + s("ssh-dss") + s("c")), EXT_FAILURE),
        ("keygen, confirm constraint", frame(bytes([EXTENSION]) + s("keygen@cloak") + s("ecdsa-sha2-nistp256") + s("c") + b"\x02"), EXT_FAILURE),
        ("three requests in one write", frame(ids) + frame(bytes([200])) + frame(ids), [IDS_ANSWER, FAILURE, IDS_ANSWER]),
        ("truncated frame, then leave", struct.pack(">I", 100) + b"\x11abc", "leave"),
        ("truncated header, then leave", b"\0\0", "leave"),
    ]
    bad = 0
    for name, data, want in cases:
        c = connect(path)
        try:
            c.sendall(data)
            if want == "leave":
                got = "left"
            elif want == "closed":
                got = "closed" if closed(c) else "still open after %d s" % TIMEOUT
            else:
                wants = want if isinstance(want, list) else [want]
                got = [reply(c)[0] for _ in wants]
                got = got[0] if not isinstance(want, list) else got
        except (EOFError, OSError) as e:
            got = "error: %s" % e
        ok = got == want or (want == "leave" and got == "left")
        bad += not ok
        print("%s: %s%s" % ("ok" if ok else "WRONG", name, "" if ok else " (got %s, want %s)" % (got, want)))
        c.close()
        if not ok and ("still open" in str(got) or "timed out" in str(got)):
            # The agent serves one client at a time: held by this one, it
            # answers none of the rest, and each would wait out TIMEOUT.
            print("the agent stopped answering; %d cases not run" % (len(cases) - cases.index((name, data, want)) - 1))
            print("%d of %d cases wrong" % (bad, len(cases) + 2))
            return 1
    # One byte at a time, then the agent must still answer normally.
    c = connect(path)
    for b in frame(ids):
        c.sendall(bytes([b]))
        time.sleep(0.05)
    r = reply(c)
    print("%s: a request sent one byte at a time" % ("ok" if r[0] == IDS_ANSWER else "WRONG"))
    bad += r[0] != IDS_ANSWER
    q = call(c, bytes([EXTENSION]) + s("query"))
    names = strings(q[1:])
    okq = q[0] == EXT_RESPONSE and names[0] == b"query" and b"keygen@cloak" in names[1:]
    print("%s: query lists %s" % ("ok" if okq else "WRONG", b", ".join(names[1:]).decode()))
    bad += not okq
    print("%d of %d cases wrong" % (bad, len(cases) + 2))
    return 1 if bad else 0


def stall(path):
    c = connect(path)
    c.sendall(struct.pack(">I", 50) + b"\x0b")
    t0 = time.time()
    ok = closed(c)
    print("hung up after %.1f s" % (time.time() - t0) if ok else "still connected after %d s" % TIMEOUT)
    return 0 if ok else 1


def bench(path, pub, seconds):
    c = connect(path)
    blob = pub_blob(pub)
    n, t0 = 0, time.perf_counter()
    while True:
        r = call(c, bytes([SIGN]) + s(blob) + s(b"bench %d" % n) + b"\0\0\0\0")
        if r[0] != SIGN_RESPONSE:
            sys.exit("bench: sign refused (type %d)" % r[0])
        n += 1
        t = time.perf_counter() - t0
        if t >= seconds:
            break
    print("%d signatures in %.3f s: %.4f per second" % (n, t, n / t))
    return 0


def proxy(listen, target, record):
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(listen)
    srv.listen(8)
    srv.settimeout(1)
    end, n = time.time() + 600, 0
    while time.time() < end:
        try:
            a, _ = srv.accept()
        except socket.timeout:
            continue
        b = socket.socket(socket.AF_UNIX)
        b.connect(target)
        with open("%s.%d" % (record, n), "ab") as rec:
            open_ends = {a: b, b: a}
            while open_ends and time.time() < end:
                r, _, _ = select.select(list(open_ends), [], [], 1)
                for x in r:
                    try:
                        d = x.recv(65536)
                    except OSError:
                        d = b""
                    if d:
                        rec.write(d)
                        rec.flush()
                        try:
                            open_ends[x].sendall(d)
                        except OSError:  # the other end left (the token
                            d = b""      # ends a kept connection between frames)
                    if not d:
                        a.close(), b.close()
                        open_ends = {}
                        break
        n += 1
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "proxy":
        return proxy(argv[2], argv[3], argv[4])
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, cmd, args = argv[1], argv[2], argv[3:]
    if cmd == "list" and not args:
        return list_keys(path)
    if cmd == "keyhash" and len(args) == 1:
        return keyhash(path, args[0])
    if cmd == "add-truncated" and len(args) == 2:
        return add_truncated(path, args[0], args[1])
    if cmd == "hostile" and not args:
        return hostile(path)
    if cmd == "stall" and not args:
        return stall(path)
    if cmd == "bench" and len(args) == 2:
        return bench(path, args[0], float(args[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
