/* SPDX-License-Identifier: ISC */
/*
 * Known answers for test_ssh_agent.c, in hex, decoded into the byte
 * arrays by agent_vectors_load() before the tests run:
 * - RFC 8032, section 7.1, TEST 1: an Ed25519 key (seed and A) and its
 *   signature of the empty message;
 * - a fixed RSA-2048 test key and OpenSSL's signatures with it, made with
 *   OpenSSH and OpenSSL:
 *     ssh-keygen -t rsa -b 2048 -N '' -f k; cp k k.pem; ssh-keygen -p -m PEM -N '' -f k.pem
 *     printf 'cloak RSA known answer' > msg
 *     openssl dgst -sha256 -sign k.pem -out s256 msg   (and -sha512: s512)
 *     openssl rsa -in k.pem -noout -text               (n, e, d, p, q, iqmp)
 *   The integers are big-endian without leading zeros, as in OpenSSH's
 *   private key; OpenSSH sends no dp or dq, which the agent computes.
 * tests/fuzz/ssh_agent_seeds.py reads the RSA key from here too.
 */
#ifndef TEST_AGENT_VECTORS_H
#define TEST_AGENT_VECTORS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint8_t rfc_seed[32], rfc_pub[32], rfc_sig[64];
static uint8_t rsa_n[256], rsa_e[3], rsa_d[256], rsa_iqmp[128], rsa_p[128], rsa_q[128], rsa_sig256[256],
	rsa_sig512[256];
static const char rsa_msg[] = "cloak RSA known answer";

static const struct {
	uint8_t *bytes;
	size_t len;
	const char *hex;
} agent_vectors[] = {
	{ rfc_seed, sizeof rfc_seed, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60" },
	{ rfc_pub, sizeof rfc_pub, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a" },
	{ rfc_sig, sizeof rfc_sig, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b" },
	{ rsa_n, sizeof rsa_n, "c9f5a62dbe26b0763927012aa51ae79356bf5d7a221ec503f4df9345035cd12718869399daa2016f592429221bdee4afadf3c36913379259f3893209c13e0364c9d763ab191575ab005a23a7a716a85b445ccbc96deb156bd07e3cb66a926a2ed7ab8dec76351da0afbbbb0551655a01fdaf0797f0872e44ac1e732d84a4032c56e530b645e44d2eaae1a0e5694e22d19bc784ab773c03eadf03ab5de64c4464b71f8147de8388fbb63b342849d325579b1125d3f1da0928583b68271be5601655c9ea17570b9c264e8f93787781c682fac1a7bd5bf30daa42bc8019158329736a3abf4f56b55640ccb0b2f150730af41ae0b66d6e84bf3c7ad4644e2028dc8f" },
	{ rsa_e, sizeof rsa_e, "010001" },
	{ rsa_d, sizeof rsa_d, "21e8942faef2f902c882c37fe0fbbcf0f08a2dcc31496043d34bec82945773a870463c27035ddb06d27d2f48d24c20b25c6f069ab046ced43a7f08ff394a4bb092f10e836e313bb1ebdbb68bd2128c4ed29210073064dd925e0dabece6c4d17e2ee8d769e1c8f64201ef6fadab666c6fd4239c8f46abb3b984fa91d50d25aa806d67510edf5713661a24f824cf92e667da399b7cd0bd6ab353bb3d86466859b25f390f14abf6dc5487e153d8dd71ebbfa2b0775799ed1568b1718e6bd1d36513f75601cfa5a71b9e6fbb6bee908340d324a7e107c43fbc804647228ce5c3c5968d65847a5304847b79a9a571ce569c41cd80efa669b93c840c9aed80cbae55d9" },
	{ rsa_iqmp, sizeof rsa_iqmp, "014e2ee930c2d5b6c7edbdc2ca547e0865ee28f0f494a319336cf4e91f3a6101447d67e24678208d24ca113adaf1401ee17d8282f4092733b1cc8c2af0e10f51564af9abf2995ac1a148189c84fead8cec92b94b8222d270fe137a8a4a79215d8d3a08d3f1bd43d38edc4d670f8f0502da620684baf4f6cdc0dd2cc6cfa38ea7" },
	{ rsa_p, sizeof rsa_p, "ec5257df7e55f7af6ab324c9de496f17796960bddcabaf4edd4314ddf05ac41517bc487f277fae9dfcb6daac87519b04482c93c8b2b1f75eaaacfb27cd37ae1d72a4aae35e12e902225113bc5c08d7ed6090b3e5356425acd945ff33184c88cf4bf6d09f09d847ba813caa1f939d755eafd5c78b01ade56bb747b6c762e471f9" },
	{ rsa_q, sizeof rsa_q, "dac6cf9f1ba35940129d6246ccc2e28aed0572aedd0ff42e3b227885a98c7b1237350283268960a200e5f72ed67bf9b4f845a4f20850db80dc6530edda43f4dff8dd42b36bbbbffb940bb1fff6408a65095149780eeea61a2c4cebb5704d920ecd3e03a78781e737ce4871c2368c7e7bb431e91e413f8a0b2e26dac8a84764c7" },
	{ rsa_sig256, sizeof rsa_sig256, "2bbdb5ce620811f3c67cfc77759dfb84260ff419af435bdaeac4e5295d43d05f22a9ebc25c72ed4fb85f13ffdb20e61b5aaff2861d0c81d39b17efa4cf12d89f69fff7444f166f5defca9a61e36253614fb36262b994fd27c8e43f95bbd43dc99e48c63103ae493e1a474f99bccd3fd921e860ef56bc4bbc289b5d226609994d8ab996736adf4d2364643daa923bf34b667bae7d3496bc9df5f974e5a76cf84ec80571c9dd5666c06ede138490df32f9b26302807b88487b7b68e1f64688220ab6813fa7bca1c93d3824ea437c03a6cb428c29f642996c1509a4d487eb4396cbb0a778c106c78e8c228f2c81d2f07f11304e9d3f920052b3bc1a32dbfb1546e8" },
	{ rsa_sig512, sizeof rsa_sig512, "2401d0ff0a555d3a8e6a4fd741341b941159671f846740c80e27eadab5197b858b9258094ec86793ee3f55fbbe91a18bf9768eaeef60df419fa6ba908762b5613464fc5d02e1c9a91ab9d2532838cdf061172e74d932ad9b461909b13a82b7eade59f485c44edfc8e1621cfadd6378f49cc1f5c57232cdf0c08561164788691ec12e180d826492db0c6916c8564cd5579a173b18ec31d8be69f50322bf5ac29620c138cdc4aaad9d480df910257ab041d704b43ec239dd5807e9e9e3da3cde199dcf13e1cb6314eba9922837b401f2292288b41fbd951bfde3a91d5f16f0ce998c6176c9ac6530afb45a0a24d0534e9510dce0ff0b9746cb2d4e18efb0464525" },
};

/* False if a vector is not exactly its array's length in hex. */
static bool agent_vectors_load(void)
{
	for (size_t i = 0; i < sizeof agent_vectors / sizeof agent_vectors[0]; i++) {
		const char *h = agent_vectors[i].hex;
		if (strlen(h) != 2 * agent_vectors[i].len)
			return false;
		for (size_t j = 0; j < agent_vectors[i].len; j++)
			if (sscanf(h + 2 * j, "%2hhx", &agent_vectors[i].bytes[j]) != 1)
				return false;
	}
	return true;
}

#endif
