#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Seed streams for the ssh-agent fuzz target: what OpenSSH's tools send,
framed, with the key whose scalar is 1 (its public key is the generator).
  ssh_agent_seeds.py OUTDIR"""
import os, struct, sys

G = bytes.fromhex("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                  "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">I", len(b)) + b


def f(body):
    return struct.pack(">I", len(body)) + body


blob = s("ecdsa-sha2-nistp256") + s("nistp256") + s(G)
add = s("ecdsa-sha2-nistp256") + s("nistp256") + s(G) + s(b"\1") + s("comment")
seeds = {
    "list": f(b"\x0b"),
    "add-sign-remove": f(b"\x11" + add) + f(b"\x0d" + s(blob) + s("data") + b"\0\0\0\0") +
    f(b"\x12" + s(blob)) + f(b"\x0b"),
    "add-lifetime": f(b"\x19" + add + b"\x01\0\0\0\x02") + f(b"\x0b") * 3,
    "lock-unlock": f(b"\x11" + add) + f(b"\x16" + s("pw")) + f(b"\x0b") + f(b"\x17" + s("px")) +
    f(b"\x17" + s("pw")) + f(b"\x13"),
    "keygen": f(b"\x1b" + s("keygen@cloak") + s("ecdsa-sha2-nistp256") + s("c") + b"\x01\0\0\0\x05") +
    f(b"\x1b" + s("query")) + f(b"\x0b"),
    "keyhash": f(b"\x11" + add) + f(b"\x1b" + s("keyhash@cloak") + s(blob)),
}
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as out:
        out.write(data)
