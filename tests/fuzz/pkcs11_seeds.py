#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Seeds for fuzz_pkcs11 (one file each in the directory argv[1]): runs
of well-formed requests in that target's input format (u8 op | app << 7,
u16 length, arguments) on its prepared token, whose session is 1, public
key 1 and private key 2; the fuzzer mutates from there."""
import os
import struct
import sys

# Operation numbers: enum p11_op in services/pkcs11/guest/p11_wire.h.
(PING, FINALIZE, TOKEN_INFO, MECH_LIST, MECH_INFO, INIT_TOKEN, OPEN_SESSION, CLOSE_SESSION, CLOSE_ALL,
 SESSION_INFO, LOGIN, LOGOUT, INIT_PIN, SET_PIN, CREATE, DESTROY, GET_ATTRS, SET_ATTRS, FIND_INIT, FIND,
 FIND_FINAL, KEYGEN, SIGN_INIT, SIGN, SIGN_UPDATE, SIGN_FINAL, RANDOM) = range(1, 28)
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
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(data)
