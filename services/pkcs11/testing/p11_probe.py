#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Probes of the cloak PKCS#11 token that no stock tool makes
(tests/integration/pkcs11.bats). Each prints "NAME 0xRV" lines for the
suite to assert on.

  p11_probe.py MODULE private PIN   read a private key's CKA_VALUE, import a
                                    key that asks to be extractable or not
                                    sensitive, log in with a wrong PIN
  p11_probe.py MODULE rsa-private PIN  read each part of an RSA private
                                    key: only the modulus and exponent come out
  p11_probe.py MODULE fork          C_Initialize again in a forked child
  p11_probe.py MODULE limits PIN    oversized attributes and templates, and
                                    data objects until the token refuses one
  p11_probe.py SOCKET hostile       malformed, truncated and oversized
                                    frames straight on the socket
  p11_probe.py MODULE idle SECONDS  a call, SECONDS idle on the connection
                                    the module keeps, and a call again
  p11_probe.py MODULE deferred PIN LABEL HASH DIR   C_SignInit deferred to
                                    the C_Sign after it (docs/pkcs11.md): signs
                                    HASH with the P-256 key LABEL (DIR/*.der
                                    for openssl), then the cases where the
                                    token's answer must still come back
  p11_probe.py MODULE deferred-crypt PIN  C_EncryptInit and
                                    C_DecryptInit deferred to the call after
                                    them (docs/pkcs11.md): AES-GCM with a new
                                    IV each time, counted in round trips (a
                                    proxy on CLOAK_PKCS11_SOCKET); the cases
                                    that go to the token at once, RSA-OAEP
                                    among them; the token's refusal when
                                    another process turned the key's usage
                                    off after a deferral
  p11_probe.py MODULE set-usage PIN LABEL ATTR VALUE   sets the boolean
                                    ATTR (hex) of the secret key LABEL
  p11_probe.py MODULE eddsa PIN     CKM_EDDSA with the token's Ed25519 key
                                    (id 05): CK_EDDSA_PARAMS's pure form signs
                                    as no parameter does, Ed25519ph and a
                                    context are refused, C_SignUpdate is not
                                    supported
  p11_probe.py MODULE functions PIN the calls no stock tool makes, on any
                                    token (its first slot): C_CopyObject,
                                    C_GetObjectSize, C_DigestKey, operation
                                    state, C_SeedRandom, the recover and
                                    dual-function calls, C_WaitForSlotEvent
                                    (not blocking), C_GetFunctionStatus
  p11_probe.py MODULE move-keypair PIN      a key move's destination
                                    (docs/pkcs11.md "Moving a key to another
                                    token"): an RSA-2048 token key pair, id
                                    0b, whose private half unwraps
  p11_probe.py MODULE move-trust SO-PIN ID MODULUS  the SO imports the
                                    RSA public key MODULUS (hex; exponent
                                    65537) as a trusted wrapping key, CKA_ID ID
                                    (hex); with ID "transport", makes the
                                    trusted AES-256 transport key instead
  p11_probe.py MODULE move-wrap PIN ID DIR  wraps, under the trusted key ID:
                                    the AES key 0a (RSA-OAEP, SHA-256) and
                                    the transport key (RSA-OAEP), and the
                                    P-256 key 0e under the transport key
                                    (CKM_AES_KEY_WRAP_KWP): DIR/aes.wrap,
                                    DIR/transport.wrap, DIR/ec.wrap; then the
                                    refused cases
  p11_probe.py MODULE move-unwrap PIN DIR   unwraps those three with the
                                    key pair 0b: the AES key as token key 0a,
                                    the P-256 key as token key 0e, both
                                    sensitive and not extractable
"""
import ctypes
import hashlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time

CKA_CLASS, CKA_VALUE, CKA_TOKEN, CKA_PRIVATE = 0x0, 0x11, 0x1, 0x2
CKA_KEY_TYPE, CKA_SENSITIVE, CKA_EXTRACTABLE, CKA_EC_PARAMS = 0x100, 0x103, 0x162, 0x180
CKA_LABEL, CKA_VENDOR_DEFINED, CKA_WRAP_WITH_TRUSTED = 0x3, 0x80000000, 0x210
CKO_DATA, CKO_PRIVATE_KEY, CKK_EC, CKK_RSA = 0, 3, 3, 0
CKF_RW_SESSION, CKF_SERIAL_SESSION = 2, 4
CKU_USER = 1
P256 = bytes.fromhex("06082a8648ce3d030107")
UL = ctypes.c_ulong


class Attr(ctypes.Structure):
    _fields_ = [("type", UL), ("pValue", ctypes.c_void_p), ("ulValueLen", UL)]


class Mech(ctypes.Structure):
    _fields_ = [("mechanism", UL), ("pParameter", ctypes.c_void_p), ("ulParameterLen", UL)]


def template(pairs):
    arr = (Attr * len(pairs))()
    keep = []
    for i, (t, v) in enumerate(pairs):
        if isinstance(v, bool):
            b = ctypes.create_string_buffer(bytes([v]), 1)
        elif isinstance(v, int):
            b = ctypes.create_string_buffer(struct.pack("<Q", v), 8)
        else:
            b = ctypes.create_string_buffer(v, len(v))
        keep.append(b)
        arr[i].type, arr[i].pValue, arr[i].ulValueLen = t, ctypes.cast(b, ctypes.c_void_p), len(b)
    return arr, keep


def load(module):
    return ctypes.CDLL(module)


def call(lib, name, *args):
    f = getattr(lib, name)
    f.restype = UL
    return f(*args)


def show(name, rv):
    print(f"{name} 0x{rv:x}", flush=True)


def private(module, pin):
    lib = load(module)
    h = UL()
    show("initialize", call(lib, "C_Initialize", None))
    show("open", call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION | CKF_RW_SESSION), None, None,
                      ctypes.byref(h)))
    show("wrong-pin", call(lib, "C_Login", h, UL(CKU_USER), b"00000000", UL(8)))
    show("login", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    t, keep = template([(CKA_CLASS, CKO_PRIVATE_KEY)])
    show("find-init", call(lib, "C_FindObjectsInit", h, t, UL(1)))
    objs, n = (UL * 8)(), UL()
    show("find", call(lib, "C_FindObjects", h, objs, UL(8), ctypes.byref(n)))
    call(lib, "C_FindObjectsFinal", h)
    print(f"private-keys {n.value}")
    for i in range(n.value):
        buf = ctypes.create_string_buffer(64)
        a = (Attr * 1)()
        a[0].type, a[0].pValue, a[0].ulValueLen = CKA_VALUE, ctypes.cast(buf, ctypes.c_void_p), 64
        show("value", call(lib, "C_GetAttributeValue", h, objs[i], a, UL(1)))
        print(f"value-len 0x{a[0].ulValueLen:x} bytes {buf.raw[:8].hex()}")
        a[0].type, a[0].ulValueLen = CKA_EC_PARAMS, 64
        show("params", call(lib, "C_GetAttributeValue", h, objs[i], a, UL(1)))
        s, keep2 = template([(CKA_SENSITIVE, False)])
        show("unsensitive", call(lib, "C_SetAttributeValue", h, objs[i], s, UL(1)))
        s, keep2 = template([(CKA_EXTRACTABLE, True)])
        show("extractable", call(lib, "C_SetAttributeValue", h, objs[i], s, UL(1)))
    d = bytes(31) + b"\x05"
    for name, extra in (("import-unsensitive", (CKA_SENSITIVE, False)),
                        ("import-extractable", (CKA_EXTRACTABLE, True)),
                        ("import", (CKA_SENSITIVE, True))):
        t, keep = template([(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_KEY_TYPE, CKK_EC), (CKA_EC_PARAMS, P256),
                            (CKA_VALUE, d), (CKA_TOKEN, False), extra])
        o = UL()
        show(name, call(lib, "C_CreateObject", h, t, UL(len(t)), ctypes.byref(o)))
        if name == "import-extractable":
            # exportable only under keys the SO trusted: the token sets it
            flag = ctypes.c_ubyte(0)
            a = (Attr * 1)()
            a[0].type, a[0].pValue, a[0].ulValueLen = CKA_WRAP_WITH_TRUSTED, ctypes.cast(ctypes.byref(flag), ctypes.c_void_p), 1
            rv = call(lib, "C_GetAttributeValue", h, o, a, UL(1))
            print("import-extractable wrap-with-trusted 0x%x %d" % (rv, flag.value))
        if name == "import":
            buf = ctypes.create_string_buffer(64)
            a = (Attr * 1)()
            a[0].type, a[0].pValue, a[0].ulValueLen = CKA_VALUE, ctypes.cast(buf, ctypes.c_void_p), 64
            show("import-value", call(lib, "C_GetAttributeValue", h, o, a, UL(1)))
    show("finalize", call(lib, "C_Finalize", None))


RSA_PARTS = (("modulus", 0x120), ("public-exponent", 0x122), ("private-exponent", 0x123),
             ("prime-1", 0x124), ("prime-2", 0x125), ("exponent-1", 0x126), ("exponent-2", 0x127),
             ("coefficient", 0x128))


def user_session(module, pin):
    """The module loaded and initialised, a read-only session on slot 0,
    logged in as the user (its result printed as "login")."""
    lib = load(module)
    h = UL()
    call(lib, "C_Initialize", None)
    call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION), None, None, ctypes.byref(h))
    show("login", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    return lib, h


def rsa_private(module, pin):
    lib, h = user_session(module, pin)
    t, keep = template([(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_KEY_TYPE, CKK_RSA)])
    call(lib, "C_FindObjectsInit", h, t, UL(2))
    objs, n = (UL * 8)(), UL()
    call(lib, "C_FindObjects", h, objs, UL(8), ctypes.byref(n))
    call(lib, "C_FindObjectsFinal", h)
    print(f"rsa-private-keys {n.value}")
    for i in range(n.value):
        for name, t in RSA_PARTS:
            buf = ctypes.create_string_buffer(1024)
            a = (Attr * 1)()
            a[0].type, a[0].pValue, a[0].ulValueLen = t, ctypes.cast(buf, ctypes.c_void_p), 1024
            show(name, call(lib, "C_GetAttributeValue", h, objs[i], a, UL(1)))
            print(f"{name}-len 0x{a[0].ulValueLen:x}")
    call(lib, "C_Finalize", None)


def fork(module):
    lib = load(module)
    show("parent-initialize", call(lib, "C_Initialize", None))
    n = UL()
    pid = os.fork()
    if pid == 0:
        show("child-before", call(lib, "C_GetSlotList", ctypes.c_ubyte(1), None, ctypes.byref(n)))
        show("child-initialize", call(lib, "C_Initialize", None))
        show("child-slots", call(lib, "C_GetSlotList", ctypes.c_ubyte(1), None, ctypes.byref(n)))
        print(f"child-count {n.value}", flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    show("parent-again", call(lib, "C_Initialize", None))
    show("parent-slots", call(lib, "C_GetSlotList", ctypes.c_ubyte(1), None, ctypes.byref(n)))


def limits(module, pin):
    """Attribute values and templates past each bound the token has (an
    attribute's 16 KiB, an object's 20 KiB and 48 attributes, a frame's
    64 KiB), then session data objects until the token refuses one: each
    refusal is a PKCS#11 error, and the token works on after them."""
    lib = load(module)
    h = UL()
    show("initialize", call(lib, "C_Initialize", None))
    show("open", call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION | CKF_RW_SESSION), None, None,
                      ctypes.byref(h)))
    show("login", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    base = [(CKA_CLASS, CKO_DATA), (CKA_TOKEN, False)]

    def create(pairs):
        t, keep = template(pairs)
        o = UL()
        return call(lib, "C_CreateObject", h, t, UL(len(pairs)), ctypes.byref(o)), o.value

    def label_len(o):
        a = (Attr * 1)()
        a[0].type, a[0].pValue, a[0].ulValueLen = CKA_LABEL, None, 0
        rv = call(lib, "C_GetAttributeValue", h, UL(o), a, UL(1))
        return rv, a[0].ulValueLen

    def set_attrs(o, pairs):
        t, keep = template(pairs)
        return call(lib, "C_SetAttributeValue", h, UL(o), t, UL(len(pairs)))

    def vendor(n, size):
        return [(CKA_VENDOR_DEFINED + i, b"a" * size) for i in range(n)]

    show("value-over-16k", create(base + [(CKA_VALUE, b"v" * (16 * 1024 + 1))])[0])
    show("object-over-20k", create(base + [(CKA_VALUE, b"v" * 12288), (CKA_LABEL, b"l" * 12288)])[0])
    show("frame-over-64k", create(base + vendor(40, 16 * 1024))[0])
    show("template-over-48", create(base + vendor(47, 1))[0])
    # 46 of the caller's and 2 above fit a template, not an object with
    # the defaults a data object gets.
    show("object-over-48", create(base + vendor(46, 1))[0])
    rv, small = create(base + [(CKA_LABEL, b"small")])
    show("small", rv)
    show("set-value-over-16k", set_attrs(small, [(CKA_LABEL, b"l" * (16 * 1024 + 1))]))
    show("set-object-over-20k", set_attrs(small, [(CKA_LABEL, b"l" * 16384),
                                                   (CKA_VENDOR_DEFINED, b"v" * 8192)]))
    show("set-object-over-48", set_attrs(small, vendor(45, 1)))
    rv, n = label_len(small)
    show("label-after", rv)
    print(f"label-length {n}", flush=True)
    made, rv = [small], 0
    for _ in range(200):
        rv, o = create(base + [(CKA_LABEL, b"many")])
        if rv:
            break
        made.append(o)
    print(f"objects {len(made)}", flush=True)
    show("refused", rv)
    show("destroy-one", call(lib, "C_DestroyObject", h, UL(made.pop())))
    show("create-again", create(base + [(CKA_LABEL, b"again")])[0])
    buf = ctypes.create_string_buffer(32)
    show("random", call(lib, "C_GenerateRandom", h, buf, UL(32)))
    show("close", call(lib, "C_CloseSession", h))
    # The session's objects went with it: a new session has room again.
    show("reopen", call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION | CKF_RW_SESSION), None, None,
                        ctypes.byref(h)))
    show("login-again", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    show("create-after-close", create(base)[0])
    call(lib, "C_Finalize", None)


def hostile(path):
    """Each case on its own connection; the token must answer a ping after."""
    app = os.urandom(16)

    def frame(body):
        return struct.pack(">I", len(body)) + body

    def ping():
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(path)
        s.sendall(frame(bytes([1, 1]) + app))
        hdr = s.recv(4, socket.MSG_WAITALL)
        (n,) = struct.unpack(">I", hdr)
        body = s.recv(n, socket.MSG_WAITALL)
        s.close()
        return struct.unpack(">Q", body[2:10])[0] if len(body) >= 10 else None

    def attempt(name, data, half_close=True):
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(path)
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
            got = s.recv(4096)
        except socket.timeout:
            got = b"timeout"
        except (ConnectionResetError, BrokenPipeError):
            got = b""  # the token hung up before reading it all
        s.close()
        what = f"rv 0x{struct.unpack('>Q', got[6:14])[0]:x}" if len(got) >= 14 else f"closed ({len(got)} bytes)"
        print(f"{name} {what} then-ping {ping()}", flush=True)

    attempt("zero-length", struct.pack(">I", 0))
    attempt("oversized", struct.pack(">I", 0xFFFFFFFF) + b"x" * 64)
    attempt("just-over", struct.pack(">I", 64 * 1024 + 1) + b"x" * 64)
    attempt("truncated", struct.pack(">I", 100) + b"\x01\x01" + app[:4])
    attempt("bad-version", frame(bytes([9, 1]) + app))
    attempt("unknown-op", frame(bytes([1, 200]) + app))
    attempt("short-header", frame(bytes([1])))
    # A session handle cut in half: a PKCS#11 error, the connection kept.
    attempt("cut-argument", frame(bytes([1, 10]) + app + b"\x00\x00\x00"))
    # A template that claims more attributes than it holds.
    attempt("bad-template", frame(bytes([1, 19]) + app + struct.pack(">QI", 1, 1000)))
    # Past the bounds the module keeps to, in a whole frame: a template of
    # 49 attributes, and an attribute value of 16 KiB + 1.
    attempt("template-49", frame(bytes([1, 15]) + app + struct.pack(">QI", 1, 49) +
                                 struct.pack(">QI", CKA_LABEL, 0) * 49))
    attempt("value-over-16k", frame(bytes([1, 15]) + app + struct.pack(">QIQI", 1, 1, CKA_LABEL, 16385) +
                                    b"l" * 16385))
    attempt("garbage", os.urandom(3000))


def idle(module, seconds):
    lib = load(module)
    call(lib, "C_Initialize", None)
    n = UL()
    show("before", call(lib, "C_GetSlotList", ctypes.c_ubyte(1), None, ctypes.byref(n)))
    time.sleep(seconds)
    show("after", call(lib, "C_GetSlotList", ctypes.c_ubyte(1), None, ctypes.byref(n)))
    print(f"slots {n.value}", flush=True)


def der_sig(raw):
    """An ECDSA signature r || s as DER, for openssl."""
    def integer(b):
        b = b.lstrip(b"\0") or b"\0"
        if b[0] & 0x80:
            b = b"\0" + b
        return b"\x02" + bytes([len(b)]) + b
    half = len(raw) // 2
    body = integer(raw[:half]) + integer(raw[half:])
    return b"\x30" + bytes([len(body)]) + body


def deferred(module, pin, label, hashfile, outdir):
    import subprocess
    lib = load(module)
    call(lib, "C_Initialize", None)
    h = UL()
    show("open", call(lib, "C_OpenSession", UL(0), UL(CKF_RW_SESSION | CKF_SERIAL_SESSION), None, None,
                      ctypes.byref(h)))
    show("login", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    t, keep = template([(CKA_CLASS, CKO_PRIVATE_KEY), (0x3, label.encode())])
    objs, n = (UL * 2)(), UL()
    call(lib, "C_FindObjectsInit", h, t, UL(2))
    call(lib, "C_FindObjects", h, objs, UL(2), ctypes.byref(n))
    call(lib, "C_FindObjectsFinal", h)
    print(f"keys {n.value}", flush=True)
    key = objs[0]
    # A second key pair for the last case, made in the guest.
    ec = template([(CKA_EC_PARAMS, P256)])
    priv = template([(CKA_TOKEN, False), (0x108, True)])  # CKA_SIGN
    pub2, key2 = UL(), UL()
    show("keygen", call(lib, "C_GenerateKeyPair", h, ctypes.byref(Mech(0x1040, None, 0)), ec[0], UL(1),
                        priv[0], UL(2), ctypes.byref(pub2), ctypes.byref(key2)))
    digest = open(hashfile, "rb").read()
    ecdsa, ecdsa_sha256 = Mech(0x1041, None, 0), Mech(0x1044, None, 0)

    def sign(name, data=digest):
        sig, siglen = ctypes.create_string_buffer(512), UL(512)
        rv = call(lib, "C_Sign", h, data, UL(len(data)), sig, ctypes.byref(siglen))
        show(name, rv)
        if rv == 0:
            with open(os.path.join(outdir, name + ".der"), "wb") as f:
                f.write(der_sig(sig.raw[:siglen.value]))

    # The first C_SignInit goes to the token; the same one again waits for
    # the C_Sign after it, and both signatures verify.
    show("first-init", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    sign("first-sign")
    show("again-init", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    sign("again-sign")
    # A deferred operation is an operation: a second C_SignInit is refused.
    show("deferred-init", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    show("deferred-init-twice", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    sign("deferred-sign")
    # The key destroyed by another process after a deferred C_SignInit:
    # C_Sign brings the token's answer, and the next C_SignInit asks it.
    show("gone-init", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    r = subprocess.run(["pkcs11-tool", "--module", module, "--login", "--pin", pin.decode(), "--delete-object",
                        "--type", "privkey", "--label", label], capture_output=True, timeout=120)
    print(f"deleted {r.returncode}", flush=True)
    sign("gone-sign")
    show("gone-init-again", call(lib, "C_SignInit", h, ctypes.byref(ecdsa), key))
    # An operation the token started (the first C_SignInit of its kind):
    # the same C_SignInit again is the token's CKR_OPERATION_ACTIVE.
    show("sha256-init", call(lib, "C_SignInit", h, ctypes.byref(ecdsa_sha256), key2))
    show("sha256-init-twice", call(lib, "C_SignInit", h, ctypes.byref(ecdsa_sha256), key2))
    sign("sha256-sign", b"a message")


# Operation numbers: enum p11_op in services/pkcs11/guest/p11_wire.h.
P11_OPS = {28: "DECRYPT_INIT", 29: "DECRYPT", 32: "ENCRYPT_INIT", 33: "ENCRYPT", 34: "ENCRYPT_UPDATE",
           35: "ENCRYPT_FINAL", 36: "DECRYPT_UPDATE", 37: "DECRYPT_FINAL", 52: "ENCRYPT_INIT_ENCRYPT",
           53: "DECRYPT_INIT_DECRYPT"}


def read_frame(s):
    """One frame (header and body) from socket s, or None at its end."""
    hdr = s.recv(4, socket.MSG_WAITALL)
    if len(hdr) < 4:
        return None
    (n,) = struct.unpack(">I", hdr)
    body = s.recv(n, socket.MSG_WAITALL)
    return hdr + body if len(body) == n else None


class RoundTrips:
    """A proxy in front of the token's socket that names the requests the
    token answered, each a round trip (one the token ended a kept
    connection before answering goes again, and counts once)."""

    def __init__(self, upstream, path):
        self.upstream, self.seen, self.lock = upstream, [], threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(path)
        self.srv.listen(8)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            c, _ = self.srv.accept()
            threading.Thread(target=self.relay, args=(c,), daemon=True).start()

    def relay(self, c):
        u = socket.socket(socket.AF_UNIX)
        try:
            u.connect(self.upstream)
            while True:
                req = read_frame(c)
                if req is None:
                    break
                u.sendall(req)
                rep = read_frame(u)
                if rep is None:
                    break
                with self.lock:
                    self.seen.append(P11_OPS.get(req[5], str(req[5])))
                c.sendall(rep)
        except OSError:
            pass
        finally:
            c.close()
            u.close()

    def take(self):
        """The requests answered since the last take."""
        with self.lock:
            seen, self.seen = self.seen, []
        return " ".join(seen) or "none"


class GcmParams(ctypes.Structure):
    _fields_ = [("pIv", ctypes.c_void_p), ("ulIvLen", UL), ("ulIvBits", UL), ("pAAD", ctypes.c_void_p),
                ("ulAADLen", UL), ("ulTagBits", UL)]


CKM_AES_CBC_PAD, CKM_AES_GCM = 0x1085, 0x1087


def gcm_mech(iv, aad, tag_bits=128):
    """CKM_AES_GCM with iv and aad (bytes); the buffers kept with it."""
    ivb, aadb = ctypes.create_string_buffer(iv, len(iv)), ctypes.create_string_buffer(aad, max(len(aad), 1))
    p = GcmParams(ctypes.cast(ivb, ctypes.c_void_p), len(iv), 8 * len(iv),
                  ctypes.cast(aadb, ctypes.c_void_p) if aad else None, len(aad), tag_bits)
    m = Mech(CKM_AES_GCM, ctypes.cast(ctypes.byref(p), ctypes.c_void_p), ctypes.sizeof(p))
    return m, (p, ivb, aadb)


def crypt_one(lib, h, name, fn, data, room=4096):
    """C_Encrypt or C_Decrypt (fn) of data: (rv, output); room None: a
    length query."""
    n = UL(room or 0)
    out = ctypes.create_string_buffer(room) if room else None
    rv = call(lib, fn, h, data, UL(len(data)), out, ctypes.byref(n))
    show(name, rv)
    return rv, (out.raw[:n.value] if out and rv == 0 else b"")


def set_usage(module, pin, label, attr, value):
    lib, h = login(module, CKU_USER, pin)
    key = find_one(lib, h, [(CKA_CLASS, CKO_SECRET_KEY), (CKA_LABEL, label.encode())])
    t, keep = template([(int(attr, 16), bool(int(value)))])
    show("set-usage", call(lib, "C_SetAttributeValue", h, key, t, UL(1)))
    call(lib, "C_Finalize", None)


# An RSA-2048 public key's modulus (made once by `openssl genrsa 2048`, its
# private half not kept): deferred_crypt's RSA-OAEP encryption, which no
# one decrypts.
RSA_N = ("caed5802195dea60c9b39baccedd408fc6b3721215d550dfe48a0a266c2727dce679b9aba109abbe6ceec321047f86f6"
         "b66e6b64e4b34c4962045c89959e3ad0b08ede0c0fb882452c4a2b3de8678e29d0c5f772f881abf147459fe0a2a6346b"
         "00e903d8f3dede18ce396a3d77ecfbc468200b9f91931185db482239e407b7a6a4131532db307b7d861a302b411730b3"
         "d8d86ee6e9ede5026eeb5cd686c61f35dd766f38546e65853063882385ce1b450515ff59a07d3cc8e338fdb3b5d6d288"
         "85f6cf690280e5e085b928854b0b749915254e1fc2d7fdd18117028da405d926e88233115d94e4745834acb8594ebf11"
         "7ade8130728323da1b605bd790402151")


def deferred_crypt(module, pin):
    upstream = os.environ["CLOAK_PKCS11_SOCKET"]
    proxy = upstream + ".trips"
    trips = RoundTrips(upstream, proxy)
    os.environ["CLOAK_PKCS11_SOCKET"] = proxy
    lib, h = login(module, CKU_USER, pin)
    label = "deferred-crypt"
    t, keep = template([(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_VALUE_LEN, 32),
                        (CKA_TOKEN, True), (CKA_ENCRYPT, True), (CKA_DECRYPT, True), (CKA_LABEL, label.encode())])
    key, key2 = UL(), UL()
    g = Mech(CKM_AES_KEY_GEN, None, 0)
    show("key", call(lib, "C_GenerateKey", h, ctypes.byref(g), t, UL(len(t)), ctypes.byref(key)))
    t2, keep2 = template([(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_VALUE_LEN, 32),
                         (CKA_TOKEN, False), (CKA_ENCRYPT, False), (CKA_DECRYPT, True)])
    show("key2", call(lib, "C_GenerateKey", h, ctypes.byref(g), t2, UL(len(t2)), ctypes.byref(key2)))
    msg = b"encrypted in a cloak guest, " * 3

    def init(name, fn, m, k=key, session=h):
        show(name, call(lib, fn, session, ctypes.byref(m), k))

    def trip(name):
        print(f"{name}-requests {trips.take()}", flush=True)

    # AES-GCM, a new IV (and AAD) each time: the first C_EncryptInit and
    # C_DecryptInit on the session go to the token on their own, the
    # others with the call after them. Each ciphertext also decrypts on a
    # new session, where nothing is deferred.
    trips.take()
    for k in range(1, 4):
        iv, aad = os.urandom(12), os.urandom(7 * k)
        m, keepm = gcm_mech(iv, aad)
        init(f"gcm{k}-encrypt-init", "C_EncryptInit", m)
        rv, ct = crypt_one(lib, h, f"gcm{k}-encrypt", "C_Encrypt", msg)
        trip(f"gcm{k}-encrypt")
        init(f"gcm{k}-decrypt-init", "C_DecryptInit", m)
        rv, pt = crypt_one(lib, h, f"gcm{k}-decrypt", "C_Decrypt", ct)
        trip(f"gcm{k}-decrypt")
        h2 = UL()
        call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION), None, None, ctypes.byref(h2))
        init(f"gcm{k}-elsewhere-init", "C_DecryptInit", m, session=h2)
        rv, pt2 = crypt_one(lib, h2, f"gcm{k}-elsewhere", "C_Decrypt", ct)
        call(lib, "C_CloseSession", h2)
        trips.take()
        print(f"gcm{k}-round-trip {int(pt == msg and pt2 == msg and len(ct) == len(msg) + 16)}", flush=True)
    # A deferred init is an operation: a second one is refused.
    m, keepm = gcm_mech(os.urandom(12), b"")
    init("twice-init", "C_EncryptInit", m)
    init("twice-init-again", "C_EncryptInit", m)
    crypt_one(lib, h, "twice-encrypt", "C_Encrypt", msg)
    trip("twice")
    # A length query, and the multi-part calls: the deferred init goes
    # first, on its own.
    init("query-init", "C_EncryptInit", m)
    crypt_one(lib, h, "query", "C_Encrypt", msg, room=None)
    trip("query")
    rv, ct = crypt_one(lib, h, "query-encrypt", "C_Encrypt", msg)
    trip("query-encrypt")
    init("multi-init", "C_EncryptInit", m)
    out, n = ctypes.create_string_buffer(4096), UL(4096)
    show("multi-update", call(lib, "C_EncryptUpdate", h, msg, UL(len(msg)), out, ctypes.byref(n)))
    part = out.raw[:n.value]
    n = UL(4096)
    show("multi-final", call(lib, "C_EncryptFinal", h, out, ctypes.byref(n)))
    print(f"multi-same {int(part + out.raw[:n.value] == ct)}", flush=True)
    trip("multi")
    # Sent at once: an IV of another length, another key (the token's
    # refusal comes from C_EncryptInit), CBC_PAD's first init (its second
    # is deferred), RSA-OAEP always.
    m16, keep16 = gcm_mech(os.urandom(16), b"")
    init("iv16-init", "C_EncryptInit", m16)
    trip("iv16-init")
    crypt_one(lib, h, "iv16-encrypt", "C_Encrypt", msg)
    trips.take()
    init("other-key-init", "C_EncryptInit", m16, k=key2)
    trip("other-key")
    for k in (1, 2):
        ivb = ctypes.create_string_buffer(os.urandom(16), 16)
        cbc = Mech(CKM_AES_CBC_PAD, ctypes.cast(ivb, ctypes.c_void_p), 16)
        init(f"cbc{k}-init", "C_EncryptInit", cbc)
        crypt_one(lib, h, f"cbc{k}-encrypt", "C_Encrypt", msg)
        trip(f"cbc{k}")
    pub = UL()
    t3, keep3 = template([(CKA_CLASS, CKO_PUBLIC_KEY), (CKA_KEY_TYPE, CKK_RSA), (CKA_TOKEN, False),
                          (CKA_MODULUS, bytes.fromhex(RSA_N)), (CKA_PUBLIC_EXPONENT, b"\x01\x00\x01"),
                          (CKA_ENCRYPT, True)])
    show("rsa-key", call(lib, "C_CreateObject", h, t3, UL(len(t3)), ctypes.byref(pub)))
    trips.take()
    om, keepo = oaep()
    for k in (1, 2):
        init(f"rsa{k}-init", "C_EncryptInit", om, k=pub)
        crypt_one(lib, h, f"rsa{k}-encrypt", "C_Encrypt", b"a key")
        trip(f"rsa{k}")
    # A failed call (a tag that does not check), a key's attributes set or
    # an object destroyed through the module, a logout: the next init
    # goes at once.
    m, keepm = gcm_mech(os.urandom(12), b"aad")
    init("failed-init", "C_DecryptInit", m)
    crypt_one(lib, h, "failed-decrypt", "C_Decrypt", ct)  # another IV's ciphertext
    trip("failed")
    init("after-failed-init", "C_DecryptInit", m)
    trip("after-failed-init")
    crypt_one(lib, h, "after-failed-decrypt", "C_Decrypt", ct)
    init("known-init", "C_EncryptInit", m)
    crypt_one(lib, h, "known-encrypt", "C_Encrypt", msg)
    trips.take()
    t4, keep4 = template([(CKA_LABEL, b"renamed")])
    show("set-attrs", call(lib, "C_SetAttributeValue", h, key2, t4, UL(1)))
    trips.take()
    init("after-set-init", "C_EncryptInit", m)
    trip("after-set-init")
    crypt_one(lib, h, "after-set-encrypt", "C_Encrypt", msg)
    init("deferred-destroy-init", "C_EncryptInit", m)
    show("destroy", call(lib, "C_DestroyObject", h, pub))
    trips.take()
    crypt_one(lib, h, "deferred-destroy-encrypt", "C_Encrypt", msg)  # deferred before: sent with it
    trip("deferred-destroy-encrypt")
    init("after-destroy-init", "C_EncryptInit", m)
    trip("after-destroy-init")
    rv, ct_d = crypt_one(lib, h, "after-destroy-encrypt", "C_Encrypt", msg)
    show("logout", call(lib, "C_Logout", h))
    show("login-again", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    trips.take()
    init("after-logout-init", "C_EncryptInit", m)
    trip("after-logout-init")
    crypt_one(lib, h, "after-logout-encrypt", "C_Encrypt", msg)
    # Deferred, then another process turns the key's CKA_ENCRYPT (then
    # CKA_DECRYPT) off: the token's refusal comes back from C_Encrypt
    # (C_Decrypt), and the next init asks the token.
    for kind, attr, data in (("encrypt", CKA_ENCRYPT, msg), ("decrypt", CKA_DECRYPT, ct_d)):
        fn = "C_EncryptInit" if kind == "encrypt" else "C_DecryptInit"
        init(f"usage-{kind}-init", fn, m)
        crypt_one(lib, h, f"usage-{kind}-first", fn[:-4], data)
        init(f"usage-{kind}-deferred-init", fn, m)
        trips.take()
        r = subprocess.run([sys.executable, __file__, module, "set-usage", pin.decode(), label, f"{attr:x}", "0"],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, CLOAK_PKCS11_SOCKET=upstream))
        print(f"usage-{kind}-other-process {(r.stdout + r.stderr).strip()}", flush=True)
        crypt_one(lib, h, f"usage-{kind}-refused", fn[:-4], data)
        trip(f"usage-{kind}-refused")
        init(f"usage-{kind}-init-again", fn, m)
        trip(f"usage-{kind}-init-again")
    call(lib, "C_Finalize", None)
    trips.srv.close()
    os.unlink(proxy)


class EddsaParams(ctypes.Structure):
    _fields_ = [("phFlag", ctypes.c_ubyte), ("ulContextDataLen", UL), ("pContextData", ctypes.c_void_p)]


CKM_EDDSA, CKK_EC_EDWARDS, CKA_ID = 0x1057, 0x40, 0x102


def eddsa(module, pin):
    lib, h = user_session(module, pin)
    keys = {}
    for cls in (CKO_PRIVATE_KEY, 2):
        t, keep = template([(CKA_CLASS, cls), (CKA_KEY_TYPE, CKK_EC_EDWARDS), (CKA_ID, b"\x05")])
        call(lib, "C_FindObjectsInit", h, t, UL(3))
        objs, n = (UL * 2)(), UL()
        call(lib, "C_FindObjects", h, objs, UL(2), ctypes.byref(n))
        call(lib, "C_FindObjectsFinal", h)
        print(f"found-{'private' if cls == CKO_PRIVATE_KEY else 'public'} {n.value}")
        keys[cls] = objs[0]
    msg = b"signed with and without CK_EDDSA_PARAMS"
    ctx = ctypes.create_string_buffer(b"ctx", 3)

    def mech(ph=None, ctx_len=0, plen=None):
        if ph is None:
            return Mech(CKM_EDDSA, None, 0), None
        p = EddsaParams(ph, ctx_len, ctypes.cast(ctx, ctypes.c_void_p) if ctx_len else None)
        size = ctypes.sizeof(p) if plen is None else plen
        return Mech(CKM_EDDSA, ctypes.cast(ctypes.byref(p), ctypes.c_void_p), size), p

    def sign(name, m):
        rv = call(lib, "C_SignInit", h, ctypes.byref(m), keys[CKO_PRIVATE_KEY])
        show(name + "-init", rv)
        if rv:
            return b""
        sig, n = ctypes.create_string_buffer(128), UL(128)
        show(name, call(lib, "C_Sign", h, msg, UL(len(msg)), sig, ctypes.byref(n)))
        return sig.raw[:n.value]

    m, keep = mech()
    plain = sign("none", m)
    m, keep = mech(0)
    pure = sign("pure", m)
    print(f"signature-len {len(plain)} same {int(plain == pure)}")
    rv = call(lib, "C_VerifyInit", h, ctypes.byref(m), keys[2])
    show("verify-pure-init", rv)
    show("verify-pure", call(lib, "C_Verify", h, msg, UL(len(msg)), pure, UL(len(pure))))
    for name, args in (("ph", (1,)), ("context", (0, 3)), ("short", (0, 0, 8))):
        m, keep = mech(*args)
        sign(name, m)
    m, keep = mech()
    show("update-init", call(lib, "C_SignInit", h, ctypes.byref(m), keys[CKO_PRIVATE_KEY]))
    show("update", call(lib, "C_SignUpdate", h, msg, UL(len(msg))))
    call(lib, "C_Finalize", None)


def functions(module, pin):
    lib = load(module)
    h, n = UL(), UL(8)
    slot = (UL * 8)()
    call(lib, "C_Initialize", None)
    call(lib, "C_GetSlotList", UL(1), slot, ctypes.byref(n))
    call(lib, "C_OpenSession", slot[0], UL(CKF_SERIAL_SESSION | CKF_RW_SESSION), None, None, ctypes.byref(h))
    show("login", call(lib, "C_Login", h, UL(CKU_USER), pin, UL(len(pin))))
    t, keep = template([(CKA_CLASS, CKO_DATA), (CKA_TOKEN, False), (CKA_LABEL, b"data"), (CKA_VALUE, b"value")])
    obj, copy = UL(), UL()
    show("create", call(lib, "C_CreateObject", h, t, UL(4), ctypes.byref(obj)))
    t2, keep2 = template([(CKA_LABEL, b"copy")])
    show("copy", call(lib, "C_CopyObject", h, obj, t2, UL(1), ctypes.byref(copy)))
    size = UL()
    show("size", call(lib, "C_GetObjectSize", h, copy, ctypes.byref(size)))
    # An AES-128 key's value hashed into a SHA-256 digest.
    t3, keep3 = template([(CKA_CLASS, 4), (CKA_KEY_TYPE, 0x1F), (CKA_TOKEN, False), (CKA_VALUE, bytes(16))])
    key = UL()
    show("aes-key", call(lib, "C_CreateObject", h, t3, UL(4), ctypes.byref(key)))
    m = Mech(0x250, None, 0)  # CKM_SHA256
    call(lib, "C_DigestInit", h, ctypes.byref(m))
    show("digest-key", call(lib, "C_DigestKey", h, key))
    out, out_len = ctypes.create_string_buffer(64), UL(64)
    show("digest-final", call(lib, "C_DigestFinal", h, out, ctypes.byref(out_len)))
    show("digest-key-value", int(out.raw[:out_len.value] == hashlib.sha256(bytes(16)).digest()))
    call(lib, "C_DigestInit", h, ctypes.byref(m))
    show("get-operation-state", call(lib, "C_GetOperationState", h, out, ctypes.byref(out_len)))
    call(lib, "C_DigestFinal", h, out, ctypes.byref(UL(64)))
    show("seed-random", call(lib, "C_SeedRandom", h, b"seed", UL(4)))
    m = Mech(0x1040, None, 0)  # CKM_ECDSA; no key needs to exist for the answer
    show("sign-recover-init", call(lib, "C_SignRecoverInit", h, ctypes.byref(m), key))
    show("verify-recover-init", call(lib, "C_VerifyRecoverInit", h, ctypes.byref(m), key))
    show("digest-encrypt-update", call(lib, "C_DigestEncryptUpdate", h, b"data", UL(4), out, ctypes.byref(out_len)))
    show("wait-for-slot-event", call(lib, "C_WaitForSlotEvent", UL(1), ctypes.byref(UL()), None))  # CKF_DONT_BLOCK
    show("function-status", call(lib, "C_GetFunctionStatus", h))
    call(lib, "C_Finalize", None)


CKA_ID, CKA_TRUSTED, CKA_ENCRYPT, CKA_DECRYPT = 0x102, 0x86, 0x104, 0x105
CKA_WRAP, CKA_UNWRAP, CKA_SIGN, CKA_VERIFY = 0x106, 0x107, 0x108, 0x10A
CKA_MODULUS, CKA_MODULUS_BITS, CKA_PUBLIC_EXPONENT, CKA_VALUE_LEN = 0x120, 0x121, 0x122, 0x161
CKA_ALWAYS_SENSITIVE, CKA_NEVER_EXTRACTABLE, CKA_LOCAL = 0x165, 0x164, 0x163
CKO_PUBLIC_KEY, CKO_SECRET_KEY, CKK_AES, CKU_SO = 2, 4, 0x1F, 0
CKM_RSA_PKCS_KEY_PAIR_GEN, CKM_RSA_PKCS_OAEP, CKM_AES_KEY_GEN = 0x0, 0x9, 0x1080
CKM_AES_KEY_WRAP_KWP, CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED = 0x210B, 0x250, 0x2, 0x1


class OaepParams(ctypes.Structure):
    _fields_ = [("hashAlg", UL), ("mgf", UL), ("source", UL), ("pSourceData", ctypes.c_void_p),
                ("ulSourceDataLen", UL)]


def login(module, who, pin):
    """The module initialised, a read-write session, logged in as who."""
    lib = load(module)
    h = UL()
    rv = call(lib, "C_Initialize", None)
    rv = rv or call(lib, "C_OpenSession", UL(0), UL(CKF_SERIAL_SESSION | CKF_RW_SESSION), None, None,
                    ctypes.byref(h))
    rv = rv or call(lib, "C_Login", h, UL(who), pin, UL(len(pin)))
    if rv:
        sys.exit(f"login 0x{rv:x}")
    return lib, h


def find_one(lib, h, pairs):
    t, keep = template(pairs)
    objs, n = (UL * 2)(), UL()
    call(lib, "C_FindObjectsInit", h, t, UL(len(t)))
    call(lib, "C_FindObjects", h, objs, UL(2), ctypes.byref(n))
    call(lib, "C_FindObjectsFinal", h)
    if n.value != 1:
        sys.exit(f"found {n.value} objects for {pairs}")
    return objs[0]


def oaep():
    p = OaepParams(CKM_SHA256, CKG_MGF1_SHA256, CKZ_DATA_SPECIFIED, None, 0)
    return Mech(CKM_RSA_PKCS_OAEP, ctypes.cast(ctypes.byref(p), ctypes.c_void_p), ctypes.sizeof(p)), p


def battrs(lib, h, o, names):
    """name=0|1 for each boolean attribute, or name=0xRV where it is refused."""
    out = []
    for name, t in names:
        flag = ctypes.c_ubyte(0)
        a = (Attr * 1)()
        a[0].type, a[0].pValue, a[0].ulValueLen = t, ctypes.cast(ctypes.byref(flag), ctypes.c_void_p), 1
        rv = call(lib, "C_GetAttributeValue", h, o, a, UL(1))
        out.append(f"{name}={flag.value}" if rv == 0 else f"{name}=0x{rv:x}")
    return " ".join(out)


def value_rv(lib, h, o):
    buf = ctypes.create_string_buffer(64)
    a = (Attr * 1)()
    a[0].type, a[0].pValue, a[0].ulValueLen = CKA_VALUE, ctypes.cast(buf, ctypes.c_void_p), 64
    return call(lib, "C_GetAttributeValue", h, o, a, UL(1))


def move_keypair(module, pin):
    lib, h = login(module, CKU_USER, pin)
    bits = 2048
    pub, keep1 = template([(CKA_TOKEN, True), (CKA_MODULUS_BITS, bits), (CKA_PUBLIC_EXPONENT, b"\x01\x00\x01"),
                           (CKA_WRAP, True), (CKA_ID, b"\x0b"), (CKA_LABEL, b"unwrap")])
    prv, keep2 = template([(CKA_TOKEN, True), (CKA_UNWRAP, True), (CKA_ID, b"\x0b"), (CKA_LABEL, b"unwrap")])
    m = Mech(CKM_RSA_PKCS_KEY_PAIR_GEN, None, 0)
    a, b = UL(), UL()
    show("keypair", call(lib, "C_GenerateKeyPair", h, ctypes.byref(m), pub, UL(len(pub)), prv, UL(len(prv)),
                         ctypes.byref(a), ctypes.byref(b)))
    print("unwrap-key", battrs(lib, h, b, (("unwrap", CKA_UNWRAP), ("decrypt", CKA_DECRYPT))))
    call(lib, "C_Finalize", None)


def move_trust(module, so_pin, key_id, modulus):
    lib, h = login(module, CKU_SO, so_pin)
    o = UL()
    if key_id == "transport":
        # Made here, never readable, never decrypting: the SO may trust it.
        t, keep = template([(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_VALUE_LEN, 32),
                            (CKA_TOKEN, True), (CKA_PRIVATE, False), (CKA_TRUSTED, True), (CKA_WRAP, True),
                            (CKA_EXTRACTABLE, True), (CKA_ENCRYPT, False), (CKA_DECRYPT, False),
                            (CKA_SIGN, False), (CKA_VERIFY, False), (CKA_LABEL, b"transport")])
        m = Mech(CKM_AES_KEY_GEN, None, 0)
        show("transport", call(lib, "C_GenerateKey", h, ctypes.byref(m), t, UL(len(t)), ctypes.byref(o)))
    else:
        t, keep = template([(CKA_CLASS, CKO_PUBLIC_KEY), (CKA_KEY_TYPE, CKK_RSA), (CKA_TOKEN, True),
                            (CKA_PRIVATE, False), (CKA_MODULUS, bytes.fromhex(modulus)),
                            (CKA_PUBLIC_EXPONENT, b"\x01\x00\x01"), (CKA_WRAP, True),
                            (CKA_TRUSTED, True), (CKA_ID, bytes.fromhex(key_id))])
        show("trusted", call(lib, "C_CreateObject", h, t, UL(len(t)), ctypes.byref(o)))
    call(lib, "C_Finalize", None)


def wrap(lib, h, m, wrapping, key):
    out, n = ctypes.create_string_buffer(4096), UL(4096)
    rv = call(lib, "C_WrapKey", h, ctypes.byref(m), wrapping, key, out, ctypes.byref(n))
    return rv, out.raw[:n.value]


def move_wrap(module, pin, key_id, out_dir):
    lib, h = login(module, CKU_USER, pin)
    dest = find_one(lib, h, [(CKA_CLASS, CKO_PUBLIC_KEY), (CKA_ID, bytes.fromhex(key_id))])
    transport = find_one(lib, h, [(CKA_CLASS, CKO_SECRET_KEY), (CKA_LABEL, b"transport")])
    aes = find_one(lib, h, [(CKA_CLASS, CKO_SECRET_KEY), (CKA_ID, b"\x0a")])
    ec = find_one(lib, h, [(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_ID, b"\x0e")])
    print("aes-key", battrs(lib, h, aes, (("sensitive", CKA_SENSITIVE), ("extractable", CKA_EXTRACTABLE),
                                          ("wrap-with-trusted", CKA_WRAP_WITH_TRUSTED))))
    print("ec-key", battrs(lib, h, ec, (("sensitive", CKA_SENSITIVE), ("extractable", CKA_EXTRACTABLE),
                                        ("wrap-with-trusted", CKA_WRAP_WITH_TRUSTED))))
    m, p = oaep()
    kwp = Mech(CKM_AES_KEY_WRAP_KWP, None, 0)
    for name, mech, wrapping, key in (("aes", m, dest, aes), ("transport", m, dest, transport),
                                      ("ec", kwp, transport, ec)):
        rv, data = wrap(lib, h, mech, wrapping, key)
        show(f"wrap-{name}", rv)
        print(f"wrap-{name}-len {len(data)}")
        if rv == 0:
            with open(os.path.join(out_dir, f"{name}.wrap"), "wb") as f:
                f.write(data)
    # Refused: the P-256 key under RSA-OAEP (a private key travels under
    # AES key wrap only); either key under an AES key the user made
    # (not trusted).
    show("wrap-ec-oaep", wrap(lib, h, m, dest, ec)[0])
    t, keep = template([(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_VALUE_LEN, 32),
                        (CKA_TOKEN, False), (CKA_WRAP, True)])
    g, o = Mech(CKM_AES_KEY_GEN, None, 0), UL()
    show("user-kek", call(lib, "C_GenerateKey", h, ctypes.byref(g), t, UL(len(t)), ctypes.byref(o)))
    show("wrap-ec-untrusted", wrap(lib, h, kwp, o, ec)[0])
    show("wrap-aes-untrusted", wrap(lib, h, kwp, o, aes)[0])
    call(lib, "C_Finalize", None)


def unwrap(lib, h, m, unwrapping, data, pairs):
    t, keep = template(pairs)
    o = UL()
    rv = call(lib, "C_UnwrapKey", h, ctypes.byref(m), unwrapping, data, UL(len(data)), t, UL(len(t)),
              ctypes.byref(o))
    return rv, o


def move_unwrap(module, pin, in_dir):
    lib, h = login(module, CKU_USER, pin)
    rsa = find_one(lib, h, [(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_ID, b"\x0b")])

    def wrapped(name):
        with open(os.path.join(in_dir, f"{name}.wrap"), "rb") as f:
            return f.read()
    m, p = oaep()
    rv, aes = unwrap(lib, h, m, rsa, wrapped("aes"),
                     [(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_TOKEN, True),
                      (CKA_ENCRYPT, True), (CKA_DECRYPT, True), (CKA_ID, b"\x0a"), (CKA_LABEL, b"moved")])
    show("unwrap-aes", rv)
    rv, transport = unwrap(lib, h, m, rsa, wrapped("transport"),
                           [(CKA_CLASS, CKO_SECRET_KEY), (CKA_KEY_TYPE, CKK_AES), (CKA_TOKEN, False),
                            (CKA_UNWRAP, True)])
    show("unwrap-transport", rv)
    kwp = Mech(CKM_AES_KEY_WRAP_KWP, None, 0)
    rv, ec = unwrap(lib, h, kwp, transport, wrapped("ec"),
                    [(CKA_CLASS, CKO_PRIVATE_KEY), (CKA_TOKEN, True), (CKA_SIGN, True), (CKA_ID, b"\x0e"),
                     (CKA_LABEL, b"moved")])
    show("unwrap-ec", rv)
    attrs = (("sensitive", CKA_SENSITIVE), ("extractable", CKA_EXTRACTABLE), ("local", CKA_LOCAL))
    print("moved-aes", battrs(lib, h, aes, attrs), f"value=0x{value_rv(lib, h, aes):x}")
    print("moved-ec", battrs(lib, h, ec, attrs), f"value=0x{value_rv(lib, h, ec):x}")
    # The transport key is a session key: gone at C_Finalize.
    call(lib, "C_Finalize", None)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    what = sys.argv[2]
    if what == "private":
        private(sys.argv[1], sys.argv[3].encode())
    elif what == "rsa-private":
        rsa_private(sys.argv[1], sys.argv[3].encode())
    elif what == "fork":
        fork(sys.argv[1])
    elif what == "limits":
        limits(sys.argv[1], sys.argv[3].encode())
    elif what == "hostile":
        hostile(sys.argv[1])
    elif what == "idle":
        idle(sys.argv[1], float(sys.argv[3]))
    elif what == "eddsa":
        eddsa(sys.argv[1], sys.argv[3].encode())
    elif what == "functions":
        functions(sys.argv[1], sys.argv[3].encode())
    elif what == "deferred-crypt":
        deferred_crypt(sys.argv[1], sys.argv[3].encode())
    elif what == "set-usage":
        set_usage(sys.argv[1], sys.argv[3].encode(), *sys.argv[4:7])
    elif what == "deferred":
        deferred(sys.argv[1], sys.argv[3].encode(), *sys.argv[4:7])
    elif what == "move-keypair":
        move_keypair(sys.argv[1], sys.argv[3].encode())
    elif what == "move-trust":
        move_trust(sys.argv[1], sys.argv[3].encode(), sys.argv[4], sys.argv[5] if len(sys.argv) > 5 else None)
    elif what == "move-wrap":
        move_wrap(sys.argv[1], sys.argv[3].encode(), sys.argv[4], sys.argv[5])
    elif what == "move-unwrap":
        move_unwrap(sys.argv[1], sys.argv[3].encode(), sys.argv[4])
    else:
        sys.exit(__doc__)
