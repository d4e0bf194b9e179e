#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Known-answer vectors through a PKCS#11 module with PyKCS11 (Debian's
python3-pykcs11), the same on any token: AES (NIST SP 800-38A's ECB, CBC
and CTR examples, AES-128 and AES-256), AES-GCM (McGrew and Viega's test case 4), AES-CMAC
(SP 800-38B D.1), AES key wrap (RFC 3394 4.1 and 4.6; RFC 5649's two
examples with and without padding), HMAC (RFC 2202 and RFC 4231 with keys
at least as long as the hash, the shortest SoftHSM2 takes) and digests
(FIPS 180's "abc"). Keys are imported as session objects; an unwrapped
key is checked by what it encrypts, beside the same key imported.

  p11_vectors.py MODULE PIN      one line "NAME ok" per vector; exit 1 at
                                 the first that does not match
  p11_vectors.py MODULE PIN derive ID PEER OUT   ECDH1_DERIVE with the EC
                                 private key of CKA_ID ID (hex) and PEER's
                                 public key (a SubjectPublicKeyInfo, DER):
                                 the shared secret into OUT, for a suite to
                                 compare with `openssl pkeyutl -derive`. The
                                 derived key asks for no CKA_UNWRAP, which
                                 the cloak token refuses beside CKA_DECRYPT
                                 (pkcs11-tool 0.23's --derive asks for both)
"""
import struct
import sys

import PyKCS11
from PyKCS11 import LowLevel

H = bytes.fromhex
CKM_AES_KEY_WRAP_PAD = 0x210A  # RFC 5649 in SoftHSM2 and in the cloak token

PT = H("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
       "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710")
K128 = H("2b7e151628aed2a6abf7158809cf4f3c")
K256 = H("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
IV = H("000102030405060708090a0b0c0d0e0f")

AES = [  # name, key, mechanism, parameter, plaintext, ciphertext
    ("sp800-38a F.1.1 ECB-AES128", K128, PyKCS11.CKM_AES_ECB, None, PT,
     H("3ad77bb40d7a3660a89ecaf32466ef97f5d3d58503b9699de785895a96fdbaaf"
       "43b1cd7f598ece23881b00e3ed0306887b0c785e27e8ad3f8223207104725dd4")),
    ("sp800-38a F.1.5 ECB-AES256", K256, PyKCS11.CKM_AES_ECB, None, PT,
     H("f3eed1bdb5d2a03c064b5a7e3db181f8591ccb10d410ed26dc5ba74a31362870"
       "b6ed21b99ca6f4f9f153e7b1beafed1d23304b7a39f9f3ff067d8d8f9e24ecc7")),
    ("sp800-38a F.2.1 CBC-AES128", K128, PyKCS11.CKM_AES_CBC, IV, PT,
     H("7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
       "73bed6b8e3c1743b7116e69e222295163ff1caa1681fac09120eca307586e1a7")),
    ("sp800-38a F.2.5 CBC-AES256", K256, PyKCS11.CKM_AES_CBC, IV, PT,
     H("f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
       "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b")),
    ("sp800-38a F.5.1 CTR-AES128", K128, PyKCS11.CKM_AES_CTR,
     struct.pack("<Q", 128) + H("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"), PT,
     H("874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
       "5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee")),
]

GCM = ("gcm test case 4", H("feffe9928665731c6d6a8f9467308308"), H("cafebabefacedbaddecaf888"),
       H("feedfacedeadbeeffeedfacedeadbeefabaddad2"),
       H("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
         "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"),
       H("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
         "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
         "5bc94fbc3221a5db94fae95ae7121a47"))

CMAC = [  # message length, tag (SP 800-38B D.1, AES-128; not the empty message:
    # SoftHSM2 refuses a NULL data pointer, which is what PyKCS11 passes)
    (16, H("070a16b46b4d4144f79bdd9dd04a287c")),
    (40, H("dfa66747de9ae63030ca32611497c827")),
    (64, H("51f0bebf7e3b9d92fc49741779363cfe")),
]

CKM_AES_KEY_WRAP_KWP = 0x210B  # RFC 5649, PKCS#11 3.0's number
WRAP = [  # name, mechanism, KEK, key data (an AES or generic key), wrapped
    ("rfc3394 4.1", PyKCS11.CKM_AES_KEY_WRAP, H("000102030405060708090a0b0c0d0e0f"),
     H("00112233445566778899aabbccddeeff"), H("1fa68b0a8112b447aef34bd8fb5a7b829d3e862371d2cfe5")),
    ("rfc3394 4.6", PyKCS11.CKM_AES_KEY_WRAP,
     H("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
     H("00112233445566778899aabbccddeeff000102030405060708090a0b0c0d0e0f"),
     H("28c9f404c4b810f4cbccb35cfb87f8263f5786e2d80ed326cbc7f0e71a99f43bfb988b9b7a02dd21")),
    # RFC 5649 with a key of whole semiblocks, under RFC 5649 6's KEK (the
    # value from OpenSSL's id-aes192-wrap-pad): SoftHSM2 2.6.1 zero-pads a
    # key to 8 bytes before its RFC 5649 wrap, so it agrees with the RFC only
    # on such keys; the RFC's own examples run with CKM_AES_KEY_WRAP_KWP
    # where the token lists it.
    ("rfc5649 KEK, 16 bytes", CKM_AES_KEY_WRAP_PAD, H("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"),
     H("00112233445566778899aabbccddeeff"), H("3d5096111d227d3c97f6a8d619ccf2ee7912eebeb1b41e43")),
]
KWP = [
    ("rfc5649 6 (20 bytes)", CKM_AES_KEY_WRAP_KWP, H("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"),
     H("c37b7e6492584340bed12207808941155068f738"),
     H("138bdeaa9b8fa7fc61f97742e72248ee5ae6ae5360d1ae6a5f54f373fa543b6a")),
    ("rfc5649 6 (7 bytes)", CKM_AES_KEY_WRAP_KWP, H("5840df6e29b02af1ab493b705bf16ea1ae8338f4dcc176a8"),
     H("466f7250617369"), H("afbeb0f07dfbf5419200f2ccb50bb24f")),
]

BIG_KEY = b"\xaa" * 131
RFC4231_6 = b"Test Using Larger Than Block-Size Key - Hash Key First"
RFC4231_7 = (b"This is a test using a larger than block-size key and a larger than block-size data. "
             b"The key needs to be hashed before being used by the HMAC algorithm.")
HMAC = [  # name, mechanism, key, message, MAC
    ("rfc2202 1", PyKCS11.CKM_SHA_1_HMAC, b"\x0b" * 20, b"Hi There", H("b617318655057264e28bc0b6fb378c8ef146be00")),
    ("rfc2202 6", PyKCS11.CKM_SHA_1_HMAC, b"\xaa" * 80, RFC4231_6, H("aa4ae5e15272d00e95705637ce8a3b55ed402112")),
    ("rfc4231 6 SHA-256", PyKCS11.CKM_SHA256_HMAC, BIG_KEY, RFC4231_6,
     H("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")),
    ("rfc4231 6 SHA-384", PyKCS11.CKM_SHA384_HMAC, BIG_KEY, RFC4231_6,
     H("4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6"
       "0c2ef6ab4030fe8296248df163f44952")),
    ("rfc4231 6 SHA-512", PyKCS11.CKM_SHA512_HMAC, BIG_KEY, RFC4231_6,
     H("80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352"
       "6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598")),
    ("rfc4231 7 SHA-256", PyKCS11.CKM_SHA256_HMAC, BIG_KEY, RFC4231_7,
     H("9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2")),
]

DIGESTS = [
    ("SHA-1", PyKCS11.CKM_SHA_1, H("a9993e364706816aba3e25717850c26c9cd0d89d")),
    ("SHA-256", PyKCS11.CKM_SHA256, H("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")),
    ("SHA-384", PyKCS11.CKM_SHA384,
     H("cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7")),
    ("SHA-512", PyKCS11.CKM_SHA512,
     H("ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
       "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")),
]


def key(session, value, key_type, *extra):
    t = [(PyKCS11.CKA_CLASS, PyKCS11.CKO_SECRET_KEY), (PyKCS11.CKA_KEY_TYPE, key_type),
         (PyKCS11.CKA_VALUE, value), (PyKCS11.CKA_TOKEN, False)]
    return session.createObject(t + list(extra))


def aes_key(session, value, *usage):
    return key(session, value, PyKCS11.CKK_AES, *[(u, True) for u in usage])


def check(name, got, want):
    if bytes(got) != want:
        print(f"{name}: got {bytes(got).hex()}, want {want.hex()}")
        sys.exit(1)
    print(f"{name} ok")


def derive(s, key_id, peer, out):
    base = s.findObjects([(PyKCS11.CKA_CLASS, PyKCS11.CKO_PRIVATE_KEY), (PyKCS11.CKA_ID, H(key_id))])
    if len(base) != 1:
        print(f"derive: {len(base)} private keys of id {key_id}")
        sys.exit(1)
    with open(peer, "rb") as f:
        spki = f.read()
    # The point ends the SubjectPublicKeyInfo: 04||X||Y, 65 bytes on P-256,
    # 97 on P-384, which its curve's OID in the same DER names.
    n = 97 if H("2b81040022") in spki else 65
    t = [(PyKCS11.CKA_CLASS, PyKCS11.CKO_SECRET_KEY), (PyKCS11.CKA_KEY_TYPE, PyKCS11.CKK_GENERIC_SECRET),
         (PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_SENSITIVE, False), (PyKCS11.CKA_EXTRACTABLE, True)]
    k = s.deriveKey(base[0], t, PyKCS11.ECDH1_DERIVE_Mechanism(spki[-n:]))
    with open(out, "wb") as f:
        f.write(bytes(s.getAttributeValue(k, [PyKCS11.CKA_VALUE])[0]))


def main():
    lib = PyKCS11.PyKCS11Lib()
    lib.load(sys.argv[1])
    slot = lib.getSlotList(tokenPresent=True)[0]
    s = lib.openSession(slot, PyKCS11.CKF_SERIAL_SESSION | PyKCS11.CKF_RW_SESSION)
    s.login(sys.argv[2])
    if sys.argv[3:4] == ["derive"]:
        derive(s, *sys.argv[4:7])
        s.logout()
        return
    enc, dec = PyKCS11.CKA_ENCRYPT, PyKCS11.CKA_DECRYPT
    for name, k, mech, param, pt, ct in AES:
        h = aes_key(s, k, enc, dec)
        m = PyKCS11.Mechanism(mech, param)
        check(name + " encrypt", s.encrypt(h, pt, m), ct)
        check(name + " decrypt", s.decrypt(h, ct, m), pt)
    name, k, iv, aad, pt, ct = GCM
    h = aes_key(s, k, enc, dec)
    m = PyKCS11.AES_GCM_Mechanism(iv, aad, 128)
    check(name + " encrypt", s.encrypt(h, pt, m), ct)
    check(name + " decrypt", s.decrypt(h, ct, m), pt)
    h = aes_key(s, K128, PyKCS11.CKA_SIGN, PyKCS11.CKA_VERIFY)
    for n, tag in CMAC:
        check(f"sp800-38b D.1 CMAC-AES128 Mlen {n}", s.sign(h, PT[:n], PyKCS11.Mechanism(PyKCS11.CKM_AES_CMAC)), tag)
    kwp = "CKM_AES_KEY_WRAP_KWP" in lib.getMechanismList(slot)
    for name, mech, kek, data, wrapped in WRAP + (KWP if kwp else []):
        w = aes_key(s, kek, PyKCS11.CKA_WRAP, PyKCS11.CKA_UNWRAP)
        # The key to wrap: its value known (not sensitive), as the RFC's.
        kt = PyKCS11.CKK_AES if len(data) in (16, 24, 32) else PyKCS11.CKK_GENERIC_SECRET
        k = key(s, data, kt, (PyKCS11.CKA_SENSITIVE, False), (PyKCS11.CKA_EXTRACTABLE, True),
                (PyKCS11.CKA_ENCRYPT, True))
        check(name + " wrap", s.wrapKey(w, k, PyKCS11.Mechanism(mech)), wrapped)
        t = [(PyKCS11.CKA_CLASS, PyKCS11.CKO_SECRET_KEY), (PyKCS11.CKA_KEY_TYPE, kt),
             (PyKCS11.CKA_TOKEN, False), (PyKCS11.CKA_SENSITIVE, True), (PyKCS11.CKA_ENCRYPT, True)]
        u = s.unwrapKey(w, wrapped, t, PyKCS11.Mechanism(mech))
        if kt == PyKCS11.CKK_AES:  # the unwrapped key encrypts as the key imported does
            ecb = PyKCS11.Mechanism(PyKCS11.CKM_AES_ECB)
            check(name + " unwrap", s.encrypt(u, PT[:16], ecb), bytes(s.encrypt(k, PT[:16], ecb)))
        else:
            check(name + " unwrap (length)", struct.pack("<Q", s.getAttributeValue(u, [PyKCS11.CKA_VALUE_LEN])[0]),
                  struct.pack("<Q", len(data)))
        try:  # the control: a changed byte does not unwrap
            s.unwrapKey(w, bytes([wrapped[0] ^ 1]) + wrapped[1:], t, PyKCS11.Mechanism(mech))
            print(name + ": a changed wrapping unwrapped")
            sys.exit(1)
        except PyKCS11.PyKCS11Error:
            print(name + " changed refused ok")
    for name, mech, k, msg, mac in HMAC:
        h = key(s, k, PyKCS11.CKK_GENERIC_SECRET, (PyKCS11.CKA_SIGN, True), (PyKCS11.CKA_VERIFY, True))
        check(name, s.sign(h, msg, PyKCS11.Mechanism(mech)), mac)
        if not s.verify(h, msg, mac, PyKCS11.Mechanism(mech)):
            print(name + ": verify refused the right MAC")
            sys.exit(1)
        if s.verify(h, msg, bytes([mac[0] ^ 1]) + mac[1:], PyKCS11.Mechanism(mech)):
            print(name + ": verify took a changed MAC")
            sys.exit(1)
    for name, mech, d in DIGESTS:
        check(name + " abc", s.digest(b"abc", PyKCS11.Mechanism(mech)), d)
        ds = s.digestSession(PyKCS11.Mechanism(mech))
        ds.update(b"a")
        ds.update(b"bc")
        check(name + " abc in parts", ds.final(), d)
    s.logout()


if __name__ == "__main__":
    main()
