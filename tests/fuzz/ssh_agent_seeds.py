#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Seed streams for the ssh-agent fuzz target: what OpenSSH's tools send,
framed, with the P-256 key whose scalar is 1 (its public key is the
generator), RFC 8032's first Ed25519 key, and the unit tests' RSA-2048 key
(tests/unit/agent_vectors.h, read from there).
  ssh_agent_seeds.py OUTDIR"""
import os, re, struct, sys

G = bytes.fromhex("046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                  "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return struct.pack(">I", len(b)) + b


def f(body):
    return struct.pack(">I", len(body)) + body


blob = s("ecdsa-sha2-nistp256") + s("nistp256") + s(G)
add = s("ecdsa-sha2-nistp256") + s("nistp256") + s(G) + s(b"\1") + s("comment")
ED_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
ED_PUB = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
ed_blob = s("ssh-ed25519") + s(ED_PUB)
ed_add = s("ssh-ed25519") + s(ED_PUB) + s(ED_SEED + ED_PUB) + s("ed comment")


def rsa_vectors():
    """The RSA vectors of tests/unit/agent_vectors.h, by name."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "agent_vectors.h")
    text = open(path).read()
    return {m.group(1): bytes.fromhex(m.group(2))
            for m in re.finditer(r'\{ rsa_(\w+), sizeof rsa_\w+, "([0-9a-f]+)" \}', text)}


def mpint(b):
    b = b.lstrip(b"\0")
    return s(b"\0" + b if b and b[0] & 0x80 else b)


R = rsa_vectors()
rsa_blob = s("ssh-rsa") + mpint(R["e"]) + mpint(R["n"])
rsa_add = s("ssh-rsa") + b"".join(mpint(R[k]) for k in ("n", "e", "d", "iqmp", "p", "q")) + s("rsa")
rsa_bad = s("ssh-rsa") + b"".join(mpint(R[k]) for k in ("n", "e", "d", "iqmp", "q", "p")) + s("bad")
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
    "ed25519-add-sign-remove": f(b"\x11" + ed_add) + f(b"\x0b") +
    f(b"\x0d" + s(ed_blob) + s("data") + b"\0\0\0\0") + f(b"\x12" + s(ed_blob)) + f(b"\x0b"),
    "ed25519-lifetime-keyhash": f(b"\x19" + ed_add + b"\x01\0\0\0\x02") +
    f(b"\x1b" + s("keyhash@cloak") + s(ed_blob)) + f(b"\x0b"),
    "ed25519-keygen": f(b"\x1b" + s("keygen@cloak") + s("ssh-ed25519") + s("c")) + f(b"\x0b"),
    # sign with SHA-256, SHA-512, and neither (SHA-1: refused); a key whose
    # p and q are swapped (its iqmp is then wrong: refused).
    "rsa-add-sign-remove": f(b"\x11" + rsa_add) + f(b"\x0b") +
    b"".join(f(b"\x0d" + s(rsa_blob) + s("data") + struct.pack(">I", fl)) for fl in (2, 4, 0)) +
    f(b"\x12" + s(rsa_blob)) + f(b"\x11" + rsa_bad) + f(b"\x0b"),
    "rsa-lifetime-keyhash": f(b"\x19" + rsa_add + b"\x01\0\0\0\x02") +
    f(b"\x1b" + s("keyhash@cloak") + s(rsa_blob)) + f(b"\x0b"),
}
os.makedirs(sys.argv[1], exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(sys.argv[1], name), "wb") as out:
        out.write(data)
