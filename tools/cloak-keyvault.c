/* SPDX-License-Identifier: ISC */
/*
 * cloak-keyvault: host client for the keyvault example guest
 * (examples/keyvault). Talks the protocol in examples/keyvault/protocol.h
 * over the guest channel's Unix socket.
 *
 *   cloak-keyvault [--record FILE] SOCKET pubkey OUT.pem
 *   cloak-keyvault [--record FILE] SOCKET sign FILE OUT.der
 *   cloak-keyvault [--record FILE] SOCKET info | keyhash | quit
 *   cloak-keyvault SOCKET bench SECONDS
 *
 * `sign` hashes FILE with SHA-256 here and has the guest sign the digest;
 * then `openssl dgst -sha256 -verify OUT.pem -signature OUT.der FILE`
 * checks it. --record appends every byte sent and received to FILE, so a
 * test can scan the channel traffic. PEM encoding uses libcrypto.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "../examples/keyvault/protocol.h"

static FILE *record;

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "cloak-keyvault: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path)
		die("socket path too long: %s", path);
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* The monitor binds the socket before the guest starts; retry briefly
	 * so a client started together with the guest does not race it. */
	for (int i = 0; i < 100; i++) {
		if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0)
			return fd;
		usleep(50000);
	}
	die("cannot connect to %s: is the keyvault guest running?", path);
	return -1;
}

static void send_all(int fd, const void *p, size_t n)
{
	if (record)
		fwrite(p, 1, n, record);
	for (const char *c = p; n;) {
		ssize_t k = write(fd, c, n);
		if (k <= 0)
			die("write to the keyvault failed: %s", strerror(errno));
		c += k;
		n -= (size_t)k;
	}
}

static void recv_all(int fd, void *p, size_t n)
{
	for (char *c = p; n;) {
		ssize_t k = read(fd, c, n);
		if (k <= 0)
			die("the keyvault closed the connection%s", k < 0 ? " (error)" : "");
		if (record)
			fwrite(c, 1, (size_t)k, record);
		c += k;
		n -= (size_t)k;
	}
}

/* One request; returns the payload length, payload in out[255]. */
static size_t call(int fd, const unsigned char *req, size_t reqlen, unsigned char *out)
{
	unsigned char hdr[2];
	send_all(fd, req, reqlen);
	recv_all(fd, hdr, 2);
	recv_all(fd, out, hdr[1]);
	if (hdr[0] != KV_OK)
		die("the keyvault refused the request (status %s)", hdr[0] == KV_ERR_UNKNOWN ?
		    "unknown op: keyhash needs --test-hooks" : "crypto error");
	return hdr[1];
}

static void write_pem(const unsigned char *point, size_t len, const char *path)
{
	OSSL_PARAM params[] = {
		OSSL_PARAM_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0),
		OSSL_PARAM_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, len),
		OSSL_PARAM_END,
	};
	EVP_PKEY *key = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
	if (!ctx || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) <= 0)
		die("the keyvault's public key is not a valid P-256 point%s", "");
	FILE *f = fopen(path, "w");
	if (!f || !PEM_write_PUBKEY(f, key) || fclose(f))
		die("cannot write %s", path);
	EVP_PKEY_free(key);
	EVP_PKEY_CTX_free(ctx);
}

static void sha256_file(const char *path, unsigned char digest[32])
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die("cannot read %s", path);
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	EVP_DigestInit_ex(c, EVP_sha256(), NULL);
	unsigned char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		EVP_DigestUpdate(c, buf, n);
	fclose(f);
	EVP_DigestFinal_ex(c, digest, NULL);
	EVP_MD_CTX_free(c);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		die("cannot write %s", path);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int a = 1;
	if (a + 1 < argc && !strcmp(argv[a], "--record")) {
		record = fopen(argv[a + 1], "ab");
		if (!record)
			die("cannot open %s", argv[a + 1]);
		a += 2;
	}
	if (argc - a < 2) {
		fprintf(stderr, "usage: cloak-keyvault [--record FILE] SOCKET "
			"pubkey OUT.pem | sign FILE OUT.der | info | keyhash | quit | bench SECONDS\n");
		return 2;
	}
	int fd = connect_to(argv[a]);
	const char *cmd = argv[a + 1];
	unsigned char out[256], req[1 + KV_DIGEST_LEN];
	if (!strcmp(cmd, "pubkey") && argc - a == 3) {
		req[0] = KV_OP_PUBKEY;
		size_t n = call(fd, req, 1, out);
		write_pem(out, n, argv[a + 2]);
	} else if (!strcmp(cmd, "sign") && argc - a == 4) {
		req[0] = KV_OP_SIGN;
		sha256_file(argv[a + 2], req + 1);
		size_t n = call(fd, req, sizeof req, out);
		write_file(argv[a + 3], out, n);
	} else if (!strcmp(cmd, "info") || !strcmp(cmd, "keyhash") || !strcmp(cmd, "quit")) {
		req[0] = cmd[0] == 'i' ? KV_OP_INFO : cmd[0] == 'k' ? KV_OP_KEYHASH : KV_OP_QUIT;
		size_t n = call(fd, req, 1, out);
		if (req[0] == KV_OP_KEYHASH)
			for (size_t i = 0; i < n; i++)
				printf("%02x%s", out[i], i + 1 == n ? "\n" : "");
		else if (n)
			printf("%.*s\n", (int)n, (const char *)out);
	} else if (!strcmp(cmd, "bench") && argc - a == 3) {
		double limit = atof(argv[a + 2]), t0 = now_s(), t;
		unsigned count = 0;
		req[0] = KV_OP_SIGN;
		memset(req + 1, 0x5a, KV_DIGEST_LEN);
		do {
			req[1] = (unsigned char)count;
			call(fd, req, sizeof req, out);
			count++;
			t = now_s() - t0;
		} while (t < limit);
		printf("%u signatures in %.3f s: %.3f per second\n", count, t, count / t);
	} else {
		die("unknown command or wrong arguments: %s", cmd);
	}
	close(fd);
	if (record)
		fclose(record);
	return 0;
}
