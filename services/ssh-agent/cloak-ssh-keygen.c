/* SPDX-License-Identifier: ISC */
/*
 * cloak-ssh-keygen: asks a cloak ssh-agent to generate a key inside its
 * protected guest (the keygen@cloak extension) and prints the public key
 * in OpenSSH's one-line format, for authorized_keys or ssh-keygen -Y
 * verify. The private key never exists outside the guest.
 *
 *   cloak-ssh-keygen [-t ecdsa|ed25519|rsa] [-a SOCKET] [-C COMMENT] [-L SECONDS]
 *                    [-f FILE.pub]
 *
 * -t: the key type, as ssh-keygen names it (default ecdsa: P-256; rsa
 * makes a 3072-bit key, as ssh-keygen does);
 * -a: the agent's socket (default $SSH_AUTH_SOCK); -C: the key's comment
 * (default "cloak@HOSTNAME"); -L: the key's lifetime in the agent; -f:
 * write the line to FILE.pub instead of standard output.
 * Exit status: 0 done; 1 the agent could not be reached or refused; 2 usage.
 * The message encoding is the agent's own parser module (agent_wire.c);
 * base64 is libcrypto's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "agent_wire.h"

static void die(int status, const char *fmt, const char *arg)
{
	fprintf(stderr, "cloak-ssh-keygen: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(status);
}

static void usage(void)
{
	fprintf(stderr, "usage: cloak-ssh-keygen [-t ecdsa|ed25519|rsa] [-a SOCKET] [-C COMMENT] "
			"[-L SECONDS] [-f FILE.pub]\n");
	exit(2);
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path)
		die(1, "socket path too long: %s", path);
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a))
		die(1, "cannot connect to the agent at %s: is it running?", path);
	return fd;
}

static void io_all(int fd, void *p, size_t n, int out)
{
	for (char *c = p; n;) {
		ssize_t k = out ? write(fd, c, n) : read(fd, c, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			die(1, "the agent closed the connection%s", out ? " (write)" : "");
		c += k;
		n -= (size_t)k;
	}
}

/* Sends body[0..n) as one message and reads the reply into buf. */
static size_t call(int fd, const uint8_t *body, size_t n, uint8_t *buf, size_t cap)
{
	uint8_t hdr[4] = { (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n };
	io_all(fd, hdr, 4, 1);
	io_all(fd, (void *)body, n, 1);
	io_all(fd, hdr, 4, 0);
	uint32_t len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	if (len == 0 || len > cap)
		die(1, "the agent sent a reply of %s bytes", len ? "too many" : "zero");
	io_all(fd, buf, len, 0);
	return len;
}

int main(int argc, char **argv)
{
	const char *sock = getenv("SSH_AUTH_SOCK"), *out_path = NULL;
	char comment[256] = "";
	long lifetime = -1;
	enum agent_key_type type = AGENT_KEY_P256;
	int c;
	while ((c = getopt(argc, argv, "a:C:t:L:f:h")) != -1) {
		switch (c) {
		case 'a': sock = optarg; break;
		case 'C': snprintf(comment, sizeof comment, "%s", optarg); break;
		case 'f': out_path = optarg; break;
		case 't':
			if (!strcmp(optarg, "ecdsa") || !strcmp(optarg, AGENT_P256_NAME))
				type = AGENT_KEY_P256;
			else if (!strcmp(optarg, "ed25519") || !strcmp(optarg, AGENT_ED25519_NAME))
				type = AGENT_KEY_ED25519;
			else if (!strcmp(optarg, "rsa") || !strcmp(optarg, AGENT_RSA_NAME))
				type = AGENT_KEY_RSA;
			else
				die(2, "-t takes a key type the agent can make, ecdsa, ed25519 or rsa, "
				       "not '%s'", optarg);
			break;
		case 'L': {
			char *end;
			lifetime = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || lifetime < 1 || lifetime > 0x7fffffffL)
				die(2, "-L takes a lifetime in seconds (1 or more), not '%s'", optarg);
			break;
		}
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (!sock || !*sock)
		die(2, "%s", "SSH_AUTH_SOCK is not set: start the agent with "
			     "eval \"$(cloak-ssh-agent)\", or give -a SOCKET");
	if (!comment[0]) {
		char host[128] = "localhost";
		gethostname(host, sizeof host - 1);
		snprintf(comment, sizeof comment, "cloak@%s", host);
	}

	uint8_t req[512], reply[4096];
	struct wire_writer w;
	wire_writer_init(&w, req, sizeof req);
	wire_put_u8(&w, SSH_AGENTC_EXTENSION);
	wire_put_cstring(&w, AGENT_EXT_KEYGEN);
	wire_put_cstring(&w, agent_key_name(type));
	wire_put_cstring(&w, comment);
	if (lifetime > 0) {
		wire_put_u8(&w, SSH_AGENT_CONSTRAIN_LIFETIME);
		wire_put_u32(&w, (uint32_t)lifetime);
	}
	if (w.bad)
		die(2, "%s", "comment too long");
	int fd = connect_to(sock);
	size_t n = call(fd, req, w.len, reply, sizeof reply);
	close(fd);

	struct wire_reader r;
	wire_reader_init(&r, reply, n);
	if (wire_get_u8(&r) != SSH_AGENT_EXTENSION_RESPONSE)
		die(1, "%s", "the agent refused to generate a key (it is locked, is full, or is "
			     "not a cloak ssh-agent: OpenSSH's ssh-agent has no keygen@cloak)");
	struct wire_bytes name = wire_get_string(&r), blob = wire_get_string(&r);
	uint8_t pub[AGENT_PUB_MAX];
	if (!wire_done(&r) || !wire_bytes_eq(name, AGENT_EXT_KEYGEN) ||
	    wire_key_blob_parse(blob, pub) != type)
		die(1, "%s", "the agent's keygen@cloak reply is malformed");

	char b64[4 * (AGENT_BLOB_MAX + 2) / 3 + 4];
	EVP_EncodeBlock((unsigned char *)b64, blob.p, (int)blob.len);
	FILE *f = out_path ? fopen(out_path, "w") : stdout;
	if (!f)
		die(1, "cannot write %s", out_path);
	fprintf(f, "%s %s %s\n", agent_key_name(type), b64, comment);
	if (fflush(f) || (out_path && fclose(f)))
		die(1, "cannot write %s", out_path ? out_path : "standard output");
	return 0;
}
