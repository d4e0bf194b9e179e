// SPDX-License-Identifier: ISC
// A test program, never installed: Java's own PKCS#11 provider (SunPKCS11,
// from the JDK) on a token, as a Java program uses it. One JVM does every
// check, since a JVM's start is the dear part where the suites run (the
// SVM tier emulates the CPU). It prints one line per check, "NAME ok" or
// "NAME FAILED: why", and exits 1 if any failed; pkcs11_java.bats runs it
// on the cloak token and on SoftHSM2 and asserts every line on both.
//
//   java P11Java CONFIG PIN     CONFIG: a SunPKCS11 configuration file
//
// Keys are session objects of the token, made by the provider's generators
// (C_GenerateKeyPair, C_GenerateKey) or converted from a key in the JVM
// (C_CreateObject). What the token signs, a verifier outside it (the
// JDK's SunEC and SunRsaSign) checks, and the token checks what it
// signed; AES-GCM round-trips and answers a published known answer.

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.KeyStore;
import java.security.Provider;
import java.security.Security;
import java.security.Signature;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PSSParameterSpec;
import java.util.Arrays;
import java.util.HexFormat;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

public final class P11Java {
	private static int failed;

	private interface Check {
		boolean run() throws Exception;
	}

	// check: runs one check and prints its line; an exception is a failure
	// whose line names it.
	private static void check(String name, Check c) {
		try {
			if (c.run()) {
				System.out.println(name + " ok");
				return;
			}
			System.out.println(name + " FAILED");
		} catch (Exception e) {
			System.out.println(name + " FAILED: " + e);
		}
		failed++;
	}

	private static byte[] sign(Provider p, String alg, PSSParameterSpec pss, KeyPair kp, byte[] msg) throws Exception {
		Signature s = Signature.getInstance(alg, p);
		if (pss != null)
			s.setParameter(pss);
		s.initSign(kp.getPrivate());
		s.update(msg);
		return s.sign();
	}

	// verify: PROVIDER's verifier (the token's, or one in the JVM when
	// PROVIDER is null) on SIG over MSG.
	private static boolean verify(Provider p, String alg, PSSParameterSpec pss, KeyPair kp, byte[] msg, byte[] sig)
		throws Exception {
		Signature s = p == null ? Signature.getInstance(alg) : Signature.getInstance(alg, p);
		if (pss != null)
			s.setParameter(pss);
		s.initVerify(kp.getPublic());
		s.update(msg);
		return s.verify(sig);
	}

	// signatures: ALG's signature by the token's key verifies on the token
	// and in the JVM; over another message it verifies on neither.
	private static void signatures(Provider p, String name, String alg, PSSParameterSpec pss, KeyPair kp) {
		byte[] msg = ("signed through SunPKCS11 by " + name).getBytes(StandardCharsets.UTF_8);
		byte[] other = "not what was signed".getBytes(StandardCharsets.UTF_8);
		byte[][] sig = new byte[1][];
		check(name + " sign", () -> (sig[0] = sign(p, alg, pss, kp, msg)).length > 0);
		if (sig[0] == null)
			return;
		check(name + " verify on the token", () -> verify(p, alg, pss, kp, msg, sig[0]));
		check(name + " verify in the JVM", () -> verify(null, alg, pss, kp, msg, sig[0]));
		check(name + " another message rejected",
		      () -> !verify(p, alg, pss, kp, other, sig[0]) && !verify(null, alg, pss, kp, other, sig[0]));
	}

	public static void main(String[] args) throws Exception {
		if (args.length != 2) {
			System.err.println("usage: java P11Java CONFIG PIN");
			System.exit(2);
		}
		Provider p = Security.getProvider("SunPKCS11").configure(args[0]);
		Security.addProvider(p);
		// Logging in: the keystore's load is SunPKCS11's C_Login.
		KeyStore ks = KeyStore.getInstance("PKCS11", p);
		ks.load(null, args[1].toCharArray());
		System.out.println("provider " + p.getName());

		KeyPair[] ec = new KeyPair[1];
		check("EC P-256 key pair", () -> {
			KeyPairGenerator g = KeyPairGenerator.getInstance("EC", p);
			g.initialize(new ECGenParameterSpec("secp256r1"));
			ec[0] = g.generateKeyPair();
			return ec[0].getPrivate().getClass().getName().startsWith("sun.security.pkcs11.");
		});
		if (ec[0] != null)
			signatures(p, "SHA256withECDSA", "SHA256withECDSA", null, ec[0]);

		KeyPair[] rsa = new KeyPair[1];
		check("RSA-2048 key pair", () -> {
			KeyPairGenerator g = KeyPairGenerator.getInstance("RSA", p);
			g.initialize(2048);
			rsa[0] = g.generateKeyPair();
			return rsa[0].getPrivate().getClass().getName().startsWith("sun.security.pkcs11.");
		});
		if (rsa[0] != null) {
			signatures(p, "SHA256withRSA", "SHA256withRSA", null, rsa[0]);
			PSSParameterSpec pss = new PSSParameterSpec("SHA-256", "MGF1", MGF1ParameterSpec.SHA256, 32, 1);
			signatures(p, "RSASSA-PSS", "RSASSA-PSS", pss, rsa[0]);
		}

		SecretKey[] aes = new SecretKey[1];
		check("AES-256 key", () -> {
			KeyGenerator g = KeyGenerator.getInstance("AES", p);
			g.init(256);
			aes[0] = g.generateKey();
			return aes[0].getClass().getName().startsWith("sun.security.pkcs11.");
		});
		if (aes[0] != null) {
			byte[] iv = new byte[12];
			new java.security.SecureRandom().nextBytes(iv);
			byte[] aad = "header".getBytes(StandardCharsets.UTF_8);
			byte[] msg = "sealed by the token's AES key".getBytes(StandardCharsets.UTF_8);
			byte[][] ct = new byte[1][];
			check("AES/GCM encrypt", () -> {
				Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p);
				c.init(Cipher.ENCRYPT_MODE, aes[0], new GCMParameterSpec(128, iv));
				c.updateAAD(aad);
				ct[0] = c.doFinal(msg);
				return ct[0].length == msg.length + 16;
			});
			check("AES/GCM decrypt round trip", () -> {
				Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p);
				c.init(Cipher.DECRYPT_MODE, aes[0], new GCMParameterSpec(128, iv));
				c.updateAAD(aad);
				return Arrays.equals(c.doFinal(ct[0]), msg);
			});
			check("AES/GCM changed tag rejected", () -> {
				byte[] bad = ct[0].clone();
				bad[bad.length - 1] ^= 1;
				Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p);
				c.init(Cipher.DECRYPT_MODE, aes[0], new GCMParameterSpec(128, iv));
				c.updateAAD(aad);
				try {
					c.doFinal(bad);
				} catch (AEADBadTagException e) {
					return true;
				}
				return false;
			});
		}

		// McGrew and Viega's GCM test case 4 (AES-128, a 96-bit IV, 20
		// bytes of AAD), with its key made a session object on the token
		// by the provider (C_CreateObject).
		HexFormat hex = HexFormat.of();
		check("AES/GCM known answer (GCM test case 4)", () -> {
			SecretKeySpec k = new SecretKeySpec(hex.parseHex("feffe9928665731c6d6a8f9467308308"), "AES");
			Cipher c = Cipher.getInstance("AES/GCM/NoPadding", p);
			c.init(Cipher.ENCRYPT_MODE, k, new GCMParameterSpec(128, hex.parseHex("cafebabefacedbaddecaf888")));
			c.updateAAD(hex.parseHex("feedfacedeadbeeffeedfacedeadbeefabaddad2"));
			byte[] out = c.doFinal(hex.parseHex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
							   + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"));
			return hex.formatHex(out).equals("42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
							 + "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091"
							 + "5bc94fbc3221a5db94fae95ae7121a47");
		});

		System.exit(failed == 0 ? 0 : 1);
	}
}
