#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Looks for a private key (a P-256 scalar, an Ed25519 seed: 32 bytes; an
RSA key's p, q, d, dp, dq: longer) in files and process memory, in every
encoding a leak could take.

  keyscan.py scalar KEYFILE          print the scalar (hex) of an unencrypted
                                     OpenSSH ECDSA P-256 private key file, or
                                     an Ed25519 key's seed
  keyscan.py ed25519-derived KEYFILE print the two halves of SHA-512(seed) of
                                     an Ed25519 key file, one a line: the
                                     clamped signing scalar and the nonce key
                                     (either one leaked lets a host forge)
  keyscan.py rsa-secrets KEYFILE     print p, q, d, d mod (p-1), d mod (q-1)
                                     (hex, one a line) of an unencrypted
                                     OpenSSH RSA private key file
  keyscan.py key HEX FILE...         look for the secret HEX (32 bytes or
                                     more; several, comma-separated) in the
                                     FILEs
  keyscan.py key-proc HEX PID        ... in every readable mapping of PID
  keyscan.py key-proc-host HEX PID   ... in every readable mapping of PID
                                     but its guest RAM (a memfd, secret
                                     memory or guest_memfd mapping of the
                                     monitor's), which it names as skipped
  keyscan.py hash SHA256HEX FILE...  look for any 32 bytes whose SHA-256 is
                                     SHA256HEX (a key known only by its hash)
  keyscan.py guest-pfns PID OUT      write the physical frame of each present
                                     page of PID's guest RAM mapping to OUT,
                                     in guest order (root)
  keyscan.py kcore-dump PFNS OUT [GO] copy those frames of physical memory, as
                                     the kernel's direct map shows them, to
                                     OUT (root, /proc/kcore); with GO, first
                                     take all the memory it needs, then wait
                                     for the file GO to exist
Neither of the last two is given the key: pages freed by the monitor are
the first the kernel hands out again, so a process that held the key
could find its own copy there. Search OUT with `key` afterwards.
  keyscan.py selftest                plant each encoding in random bytes and
                                     check that both searches find each one

Encodings: big-endian, little-endian, SSH mpint (length, sign byte when
the top bit is set), hex (both byte orders, both cases), base64 of the
big-endian bytes and of the mpint at every alignment (also across line
breaks, as in key files), and BearSSL-style little-endian arrays of 31-
and 30-bit limbs. One line per find: "found ENCODING in WHERE at OFFSET".
Exit status: 0 nothing found, 1 found, 2 usage or I/O error.
"""
import base64, binascii, hashlib, os, re, struct, sys, time


def mpint(d):
    v = d.lstrip(b"\0")
    if v and v[0] & 0x80:
        v = b"\0" + v
    return struct.pack(">I", len(v)) + v


def limbs(d, bits):
    x, out = int.from_bytes(d, "big"), b""
    for _ in range((8 * len(d) + bits - 1) // bits):
        out += struct.pack("<I", x & ((1 << bits) - 1))
        x >>= bits
    return out


def b64_cores(payload):
    """The base64 characters that depend only on payload, for each of the
    three byte alignments it can have in a longer encoded stream."""
    cores = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + payload + b"\0\0").decode()
        first = -(-8 * k // 6)
        last = (8 * k + 8 * len(payload)) // 6
        cores.append(enc[first:last].encode())
    return cores


def encodings(d):
    e = {"big-endian": [d], "little-endian": [d[::-1]], "mpint": [mpint(d)]}
    for name, v in (("hex big-endian", d), ("hex little-endian", d[::-1])):
        h = binascii.hexlify(v)
        e[name] = [h, h.upper()]
    e["base64 big-endian"] = b64_cores(d)
    e["base64 mpint"] = b64_cores(mpint(d))
    e["31-bit limbs"] = [limbs(d, 31)]
    e["30-bit limbs"] = [limbs(d, 30)]
    return e


def find_key(d, data, where, base=0):
    found = []
    flat = None
    for name, needles in encodings(d).items():
        for n in needles:
            i = data.find(n)
            if i >= 0:
                found.append("found %s in %s at %d" % (name, where, base + i))
            elif name.startswith("base64"):
                if flat is None:
                    flat = data.replace(b"\n", b"").replace(b"\r", b"")
                if n in flat:
                    found.append("found %s (across line breaks) in %s" % (name, where))
    return found


def windows(data):
    """Every 32-byte value the data could hold a scalar as."""
    for i in range(len(data) - 31):
        w = data[i:i + 32]
        yield i, w
        yield i, w[::-1]
    for bits in (31, 30):
        n = (256 + bits - 1) // bits
        for i in range(len(data) - 4 * n + 1):
            words = struct.unpack_from("<%dI" % n, data, i)
            if max(words) >> bits:
                continue
            x = 0
            for w in reversed(words):
                x = (x << bits) | w
            if x >> 256 == 0 and x:
                yield i, x.to_bytes(32, "big")


def decodings(data):
    yield "raw", data
    for m in re.finditer(rb"[0-9a-fA-F]{64,}", data):
        for k in (0, 1):
            run = m.group()[k:]
            yield "hex at %d" % m.start(), binascii.unhexlify(run[:len(run) // 2 * 2])
    flat = data.replace(b"\n", b"").replace(b"\r", b"")
    for m in re.finditer(rb"[A-Za-z0-9+/]{43,}", flat):
        for k in range(4):
            run = m.group()[k:]
            yield "base64", base64.b64decode(run[:len(run) // 4 * 4])


def find_hash(h, data, where):
    for how, dec in decodings(data):
        for i, w in windows(dec):
            if hashlib.sha256(w).digest() == h:
                return ["found a %s window hashing to the key in %s at %d" % (how, where, i)]
    return []


GUEST_RAM = ("memfd:cloak-guest", "/secretmem", "kvm-gmem")


def read(path):
    with open(path, "rb") as f:
        return f.read()


def proc_regions(pid):
    """(start, end, name) of each readable mapping of pid."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if parts[1][0] == "r" and not line.rstrip().endswith("[vsyscall]"):
                yield lo, hi, parts[5] if len(parts) > 5 else "anonymous"


def scan_proc(d, pid, skip_guest_ram=False):
    found, read_bytes, refused, skipped = [], 0, [], []
    with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
        for lo, hi, name in proc_regions(pid):
            if skip_guest_ram and any(g in name for g in GUEST_RAM):
                skipped.append("%s %x-%x" % (name, lo, hi))
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except OSError as e:
                refused.append("%s (%s)" % (name, e.strerror))
                continue
            read_bytes += len(data)
            found += find_key(d, data, "%s %x-%x" % (name, lo, hi), lo)
    print("read %d bytes of process %d; refused: %s" % (read_bytes, pid, ", ".join(refused) or "none"))
    if skip_guest_ram:
        print("skipped guest RAM: %s" % (", ".join(skipped) or "none"))
    return found


def guest_pfns(pid, out):
    """PFNs of the present pages of the largest guest RAM mapping of pid."""
    best = None
    for lo, hi, name in proc_regions(pid):
        if any(g in name for g in GUEST_RAM) and (best is None or hi - lo > best[1] - best[0]):
            best = (lo, hi, name)
    if best is None:
        sys.exit("keyscan: no guest RAM mapping in /proc/%d/maps" % pid)
    lo, hi, name = best
    pfns = []
    with open("/proc/%d/pagemap" % pid, "rb", buffering=0) as pm:
        pm.seek(lo // 4096 * 8)
        raw = pm.read((hi - lo) // 4096 * 8)
    for (e,) in struct.iter_unpack("<Q", raw):
        if e >> 63 and e & ((1 << 55) - 1):
            pfns.append(e & ((1 << 55) - 1))
    with open(out, "w") as f:
        f.write("".join("%x\n" % p for p in pfns))
    print("%d of %d pages of %s present" % (len(pfns), (hi - lo) // 4096, name))
    return 0 if pfns else 2


def direct_map_segments(kc):
    eh = kc.read(64)
    phoff, = struct.unpack_from("<Q", eh, 32)
    phnum, = struct.unpack_from("<H", eh, 56)
    segs = []
    for i in range(phnum):
        kc.seek(phoff + i * 56)
        t, _, off, va, pa, _, memsz, _ = struct.unpack("<IIQQQQQQ", kc.read(56))
        if t == 1 and pa != 0xffffffffffffffff and va < 0xffffffff80000000:
            segs.append((pa, pa + memsz, off))
    return segs


def kcore_dump(pfn_file, out, go=None):
    with open(pfn_file) as f:
        pfns = [int(x, 16) for x in f.read().split()]
    # Every page this process needs is taken before GO: freed guest pages
    # would otherwise come back as its own buffers and be overwritten.
    buf = bytearray(len(pfns) * 4096)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    kc = open("/proc/kcore", "rb", buffering=0)
    segs = direct_map_segments(kc)
    while go and not os.path.exists(go):
        time.sleep(0.01)
    view = memoryview(buf)
    for i, p in enumerate(pfns):
        a, page = p * 4096, view[i * 4096:(i + 1) * 4096]
        page[:] = bytes(4096)
        for lo, hi, off in segs:
            if lo <= a < hi:
                kc.seek(off + a - lo)
                kc.readinto(page)
                break
    kc.close()
    zero = bytes(4096)
    n = sum(1 for i in range(len(pfns)) if view[i * 4096:(i + 1) * 4096] != zero)
    with open(out, "wb") as o:
        o.write(buf)
    print("read %d pages of RAM, %d not all zero" % (len(pfns), n))
    return 0


def openssh_private(path):
    """The key type and a reader of the private section's fields."""
    text = read(path).decode()
    body = text.split("-----BEGIN OPENSSH PRIVATE KEY-----")[1].split("-----END")[0]
    blob = base64.b64decode("".join(body.split()))
    pos = [len(b"openssh-key-v1\0")]

    def string():
        n = struct.unpack_from(">I", blob, pos[0])[0]
        v = blob[pos[0] + 4:pos[0] + 4 + n]
        pos[0] += 4 + n
        return v

    cipher, _kdf, _opts = string(), string(), string()
    if cipher != b"none":
        sys.exit("keyscan: %s is encrypted" % path)
    pos[0] += 4  # number of keys
    string()     # public key
    priv, pos[0] = string(), 0
    blob = priv
    pos[0] = 8   # two check words
    return string(), string


def rsa_secrets(path):
    kind, string = openssh_private(path)
    if kind != b"ssh-rsa":
        sys.exit("keyscan: %s is not an ssh-rsa key" % path)
    n, e, d, iqmp, p, q = (string().lstrip(b"\0") for _ in range(6))
    dv = int.from_bytes(d, "big")
    crt = [(dv % (int.from_bytes(f, "big") - 1)).to_bytes(len(f), "big") for f in (p, q)]
    return [p, q, d] + crt


def openssh_scalar(path):
    kind, string = openssh_private(path)
    if kind == b"ssh-ed25519":
        string()             # A
        return string()[:32]  # seed || A
    if kind != b"ecdsa-sha2-nistp256":
        sys.exit("keyscan: %s is neither an ecdsa-sha2-nistp256 nor an ssh-ed25519 key" % path)
    string(), string()  # curve, point
    return string().lstrip(b"\0").rjust(32, b"\0")


def ed25519_derived(path):
    """RFC 8032 5.1.5: h = SHA-512(seed); s = h[0:32] clamped; prefix = h[32:64]."""
    h = hashlib.sha512(openssh_scalar(path)).digest()
    a = bytearray(h[:32])
    a[0] &= 248
    a[31] &= 127
    a[31] |= 64
    return [bytes(a), h[32:]]


def selftest():
    d = os.urandom(32)
    d = b"\x80" + d[1:]  # top bit set: the mpint gets its sign byte
    h = hashlib.sha256(d).digest()
    plants = [(n, x) for n, xs in encodings(d).items() if not n.startswith("base64") for x in xs]
    # Base64 as it occurs: a whole encoded stream with the value at each
    # alignment, wrapped across a line break.
    for name, payload in (("base64 big-endian", d), ("base64 mpint", mpint(d))):
        for k in range(3):
            enc = base64.b64encode(os.urandom(k) + payload + os.urandom(2))
            plants.append(("%s, alignment %d" % (name, k), enc[:20] + b"\n" + enc[20:]))
    ok = True
    for name, x in plants:
        data = os.urandom(1000) + x + os.urandom(1000)
        k, hh = find_key(d, data, name), find_hash(h, data, name)
        if not k or not hh:
            print("selftest: %s not found (key search %s, hash search %s)" % (name, bool(k), bool(hh)))
            ok = False
    if find_key(d, os.urandom(100000), "noise") or find_hash(h, os.urandom(3000), "noise"):
        print("selftest: found in random bytes")
        ok = False
    print("selftest: %s" % ("%d plants, each found" % len(plants) if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if len(argv) == 2 and argv[1] == "selftest":
        return selftest()
    if len(argv) == 4 and argv[1] == "guest-pfns":
        return guest_pfns(int(argv[2]), argv[3])
    if len(argv) in (4, 5) and argv[1] == "kcore-dump":
        return kcore_dump(argv[2], argv[3], argv[4] if len(argv) == 5 else None)
    if len(argv) == 3 and argv[1] == "scalar":
        print(binascii.hexlify(openssh_scalar(argv[2])).decode())
        return 0
    if len(argv) == 3 and argv[1] == "rsa-secrets":
        for v in rsa_secrets(argv[2]):
            print(binascii.hexlify(v).decode())
        return 0
    if len(argv) == 3 and argv[1] == "ed25519-derived":
        for v in ed25519_derived(argv[2]):
            print(binascii.hexlify(v).decode())
        return 0
    if len(argv) >= 3 and argv[1] in ("key", "key-proc", "key-proc-host", "hash"):
        vs = [binascii.unhexlify(x) for x in argv[2].split(",")]
        if any(len(v) < 32 for v in vs) or (argv[1] == "hash" and (len(vs) > 1 or len(vs[0]) != 32)):
            sys.exit("keyscan: expected 32 bytes of hex%s" % ("" if argv[1] == "hash" else " or more"))
        v = vs[0]
        if argv[1] in ("key-proc", "key-proc-host") and len(argv) == 4:
            found = [x for v in vs for x in scan_proc(v, int(argv[3]), argv[1] == "key-proc-host")]
        elif argv[1] == "key":
            data = [(p, read(p)) for p in argv[3:]]
            found = [x for v in vs for p, d in data for x in find_key(v, d, p)]
        else:
            found = [x for p in argv[3:] for x in find_hash(v, read(p), p)]
        for f in found:
            print(f)
        return 1 if found else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except OSError as e:
        print("keyscan: %s" % e, file=sys.stderr)
        sys.exit(2)
