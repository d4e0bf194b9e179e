#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Seeds for fuzz_pkcs11 (one file each in the directory argv[1]): runs
of well-formed requests in that target's input format (u8 op | app << 7,
u16 length, arguments) on its prepared token, whose session is 1, public
key 1, private key 2, AES-256 key 3 and HMAC key 4; the fuzzer mutates
from there."""
import os
import struct
import sys

# Operation numbers: enum p11_op in services/pkcs11/guest/p11_wire.h.
(PING, FINALIZE, TOKEN_INFO, MECH_LIST, MECH_INFO, INIT_TOKEN, OPEN_SESSION, CLOSE_SESSION, CLOSE_ALL,
 SESSION_INFO, LOGIN, LOGOUT, INIT_PIN, SET_PIN, CREATE, DESTROY, GET_ATTRS, SET_ATTRS, FIND_INIT, FIND,
 FIND_FINAL, KEYGEN, SIGN_INIT, SIGN, SIGN_UPDATE, SIGN_FINAL, RANDOM, DECRYPT_INIT, DECRYPT, SIGN_INIT_SIGN,
 GENERATE_KEY, ENCRYPT_INIT, ENCRYPT, ENCRYPT_UPDATE, ENCRYPT_FINAL, DECRYPT_UPDATE, DECRYPT_FINAL,
 DIGEST_INIT, DIGEST, DIGEST_UPDATE, DIGEST_KEY, DIGEST_FINAL, VERIFY_INIT, VERIFY, VERIFY_UPDATE,
 VERIFY_FINAL, COPY_OBJECT, OBJECT_SIZE, WRAP_KEY, UNWRAP_KEY, DERIVE_KEY, ENCRYPT_INIT_ENCRYPT,
 DECRYPT_INIT_DECRYPT) = range(1, 54)
P256 = bytes.fromhex("06082a8648ce3d030107")
P384 = bytes.fromhex("06052b81040022")


def u32(v): return struct.pack(">I", v)
def u64(v): return struct.pack(">Q", v)
def byts(b): return u32(len(b)) + b
def ul(v): return struct.pack("<Q", v)


def tmpl(*attrs):
    return u32(len(attrs)) + b"".join(u64(t) + byts(v) for t, v in attrs)


def req(op, args=b"", app=0):
    return bytes([op | app << 7]) + struct.pack(">H", len(args)) + args


S = u64(1)
seeds = {
    "info": req(TOKEN_INFO) + req(MECH_LIST) + req(MECH_INFO, u64(0x1041)) + req(SESSION_INFO, S),
    "find": req(FIND_INIT, S + tmpl((0, ul(3)))) + req(FIND, S + u32(10)) + req(FIND_FINAL, S),
    "attrs": req(GET_ATTRS, S + u64(2) + u32(3) + u64(0x11) + u64(64) + u64(0x180) + u64(2**64 - 1)
                 + u64(3) + u64(64)),
    "set": req(SET_ATTRS, S + u64(2) + tmpl((3, b"new"), (0x103, b"\x01"), (0x162, b"\x01"))),
    "sign": req(SIGN_INIT, S + u64(0x1041) + byts(b"") + u64(2)) + req(SIGN, S + b"\x00" + u64(64) + byts(b"x" * 32)),
    "sign-multi": req(SIGN_INIT, S + u64(0x1044) + byts(b"") + u64(2)) + req(SIGN_UPDATE, S + byts(b"abc"))
    + req(SIGN_FINAL, S + b"\x01" + u64(0)) + req(SIGN_FINAL, S + b"\x00" + u64(64)),
    "import": req(CREATE, S + tmpl((0, ul(3)), (0x100, ul(3)), (0x180, P256), (0x11, b"\x05"), (1, b"\x00")))
    + req(CREATE, S + tmpl((0, ul(1)), (0x11, b"0\x82cert"), (1, b"\x01"))) + req(DESTROY, S + u64(3)),
    "keygen": req(KEYGEN, S + u64(0x1040) + byts(b"") + tmpl((0x180, P384)) + tmpl((1, b"\x00"))),
    "pins": req(LOGOUT, S) + req(LOGIN, S + u64(1) + byts(b"000000")) + req(LOGIN, S + u64(1) + byts(b"123456"))
    + req(SET_PIN, S + byts(b"123456") + byts(b"654321")),
    "apps": req(OPEN_SESSION, u64(4), app=1) + req(LOGIN, u64(2) + u64(0) + byts(b"87654321"), app=1)
    + req(INIT_PIN, u64(2) + byts(b"999999"), app=1) + req(CLOSE_ALL, app=1) + req(FINALIZE, app=1),
    "random": req(RANDOM, S + u32(64)) + req(CLOSE_SESSION, S) + req(INIT_TOKEN, byts(b"87654321") + b" " * 32),
}
# Secret keys, encryption and decryption in each mode (single- and
# multi-part), MACs, digests, verification, copies.
IV = bytes(range(16))
GCM = u64(96) + u64(128) + byts(IV[:12]) + byts(b"aad")
CTR = ul(128) + IV
for name, mech, param in (("ecb", 0x1081, b""), ("cbc", 0x1082, IV), ("cbcpad", 0x1085, IV),
                          ("ctr", 0x1086, CTR), ("gcm", 0x1087, GCM)):
    data = b"m" * 48
    seeds["aes-" + name] = (
        req(ENCRYPT_INIT, S + u64(mech) + byts(param) + u64(3))
        + req(ENCRYPT, S + b"\x00" + u64(4096) + u64(len(data)) + byts(data))
        + req(ENCRYPT_INIT, S + u64(mech) + byts(param) + u64(3))
        + req(ENCRYPT_UPDATE, S + b"\x00" + u64(4096) + u64(17) + byts(data[:17]))
        + req(ENCRYPT_FINAL, S + b"\x01" + u64(0)) + req(ENCRYPT_FINAL, S + b"\x00" + u64(64))
        + req(DECRYPT_INIT, S + u64(mech) + byts(param) + u64(3))
        + req(DECRYPT_UPDATE, S + b"\x00" + u64(4096) + u64(len(data)) + byts(data))
        + req(DECRYPT_FINAL, S + b"\x00" + u64(4096)))
# An init and the call after it in one request (the module's deferred
# C_EncryptInit and C_DecryptInit): GCM both ways, CBC_PAD; an INIT part
# refused (the public key), a second session that is not the first's.
ct = b"c" * 64
seeds["init-crypt"] = (req(ENCRYPT_INIT_ENCRYPT, S + u64(0x1087) + byts(GCM) + u64(3) + S + b"\x00" + u64(4096)
                           + u64(48) + byts(b"m" * 48))
                       + req(DECRYPT_INIT_DECRYPT, S + u64(0x1087) + byts(GCM) + u64(3) + S + b"\x00" + u64(4096)
                             + u64(len(ct)) + byts(ct))
                       + req(ENCRYPT_INIT_ENCRYPT, S + u64(0x1085) + byts(IV) + u64(3) + S + b"\x01" + u64(0)
                             + u64(1000) + byts(b""))
                       + req(ENCRYPT, S + b"\x00" + u64(4096) + u64(20) + byts(b"m" * 20))
                       + req(ENCRYPT_INIT_ENCRYPT, S + u64(0x1087) + byts(GCM) + u64(1) + S + b"\x00" + u64(64)
                             + u64(16) + byts(b"m" * 16))
                       + req(DECRYPT_INIT_DECRYPT, S + u64(0x1081) + byts(b"") + u64(3) + u64(2) + b"\x00"
                             + u64(64) + u64(16) + byts(b"m" * 16)))
seeds["secret"] = (req(GENERATE_KEY, S + u64(0x1080) + byts(b"") + tmpl((0x161, ul(16)), (0x162, b"\x01")))
                   + req(CREATE, S + tmpl((0, ul(4)), (0x100, ul(0x1f)), (0x11, b"k" * 16), (0x163, b"\x00")))
                   + req(SET_ATTRS, S + u64(3) + tmpl((0x162, b"\x01"), (0x103, b"\x00"), (0x106, b"\x01")))
                   + req(COPY_OBJECT, S + u64(3) + tmpl((1, b"\x00"))) + req(OBJECT_SIZE, S + u64(3)))
seeds["mac"] = (req(SIGN_INIT, S + u64(0x251) + byts(b"") + u64(4)) + req(SIGN_UPDATE, S + byts(b"abc"))
                + req(SIGN_FINAL, S + b"\x00" + u64(64))
                + req(VERIFY_INIT, S + u64(0x251) + byts(b"") + u64(4)) + req(VERIFY, S + byts(b"abc") + byts(b"x" * 32))
                + req(SIGN_INIT, S + u64(0x108a) + byts(b"") + u64(3)) + req(SIGN, S + b"\x00" + u64(64) + byts(b"abc")))
seeds["digest"] = (req(DIGEST_INIT, S + u64(0x250) + byts(b"")) + req(DIGEST_UPDATE, S + byts(b"abc"))
                   + req(DIGEST_KEY, S + u64(3)) + req(DIGEST_KEY, S + u64(2)) + req(DIGEST_INIT, S + u64(0x270) + byts(b""))
                   + req(DIGEST, S + b"\x00" + u64(64) + byts(b"abc")) + req(DIGEST_FINAL, S + b"\x00" + u64(64)))
seeds["verify"] = (req(SIGN_INIT, S + u64(0x1041) + byts(b"") + u64(2)) + req(SIGN, S + b"\x00" + u64(64) + byts(b"h" * 32))
                   + req(VERIFY_INIT, S + u64(0x1041) + byts(b"") + u64(1)) + req(VERIFY, S + byts(b"h" * 32) + byts(b"s" * 64))
                   + req(VERIFY_INIT, S + u64(0x1044) + byts(b"") + u64(1)) + req(VERIFY_UPDATE, S + byts(b"abc"))
                   + req(VERIFY_FINAL, S + byts(b"s" * 64)))
os.makedirs(sys.argv[1], exist_ok=True)
# Wrapping (refused: the keys are not extractable, the wrapping key not
# trusted), unwrapping, ECDH.
seeds["wrap"] = (req(SET_ATTRS, S + u64(3) + tmpl((0x110, b"\x01")))
                 + req(WRAP_KEY, S + u64(0x2109) + byts(b"") + u64(3) + u64(4) + b"\x00" + u64(4096))
                 + req(WRAP_KEY, S + u64(0x210b) + byts(b"") + u64(3) + u64(2) + b"\x01" + u64(0))
                 + req(UNWRAP_KEY, S + u64(0x2109) + byts(b"") + u64(3) + byts(bytes(24))
                       + tmpl((0, ul(4)), (0x100, ul(0x1f))))
                 + req(UNWRAP_KEY, S + u64(0x210b) + byts(b"") + u64(3) + byts(bytes(40)) + tmpl((0, ul(3))))
                 + req(UNWRAP_KEY, S + u64(9) + byts(u64(1) + u32(0) + u32(0)) + u64(3) + byts(bytes(256))
                       + tmpl((0, ul(4)))))
seeds["derive"] = (req(SET_ATTRS, S + u64(2) + tmpl((0x10c, b"\x01")))
                   + req(DERIVE_KEY, S + u64(0x1050) + byts(u64(1) + u32(0) + byts(b"\x04" + bytes(64))) + u64(2)
                         + tmpl((0, ul(4)), (0x100, ul(0x10)), (0x162, b"\x01"), (0x103, b"\x00")))
                   + req(DERIVE_KEY, S + u64(0x1051) + byts(u64(1) + u32(0) + byts(b"\x04\x41\x04" + bytes(64)))
                         + u64(2) + tmpl((0x161, ul(16)), (0x100, ul(0x1f)))))
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
