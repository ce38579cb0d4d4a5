/*
 * A do-nothing SA agent in C on libibumad: it answers every PathRecord
 * Get or GetTable with the request turned into a response, cut to the
 * size of a one-PathRecord answer, without looking anything up. It is the
 * floor of what answering a MAD can cost on this machine: one thread, no
 * channels, the library every C agent (ibacm's, OpenSM's vendor layer)
 * uses. fabric-bench compiles it with the system's C compiler and runs
 * it beside local-sa and the Rust echo agent.
 *
 *   cc -O2 -o sa_echo_c sa_echo.c -libumad
 *
 * Runs until killed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/umad.h>

#define SA_CLASS 3
#define SA_CLASS_VERSION 2
#define METHOD_GET 0x01
#define METHOD_GET_TABLE 0x12
#define RESPONSE 0x80
#define GSI_QKEY 0x80010000u
/* SA MAD headers (56 bytes) and one PathRecord (64 bytes). */
#define ANSWER_LEN (56 + 64)
#define MAD_LEN 256

int main(void)
{
	if (umad_init() < 0) {
		fprintf(stderr, "sa_echo_c: umad_init failed\n");
		return 1;
	}
	int port = umad_open_port(NULL, 0);
	if (port < 0) {
		fprintf(stderr, "sa_echo_c: cannot open the first port (%d)\n", port);
		return 1;
	}
	long methods[16 / sizeof(long)];
	memset(methods, 0, sizeof(methods));
	for (int m = 0; m < 128; m++) {
		if (m == METHOD_GET || m == METHOD_GET_TABLE)
			methods[m / (8 * sizeof(long))] |= 1L << (m % (8 * sizeof(long)));
	}
	int agent = umad_register(port, SA_CLASS, SA_CLASS_VERSION, 0, methods);
	if (agent < 0) {
		fprintf(stderr, "sa_echo_c: cannot register as the SA agent (%d)\n", agent);
		return 1;
	}
	void *umad = umad_alloc(1, umad_size() + MAD_LEN);
	if (!umad)
		return 1;
	fprintf(stderr, "sa_echo_c: answering SA requests\n");
	for (;;) {
		int len = MAD_LEN;
		if (umad_recv(port, umad, &len, -1) < 0)
			continue;
		uint8_t *mad = umad_get_mad(umad);
		mad[3] |= RESPONSE;       /* method: the response */
		mad[4] = mad[5] = 0;      /* status: success */
		ib_mad_addr_t *addr = umad_get_mad_addr(umad);
		addr->qkey = htonl(GSI_QKEY);
		addr->path_bits = 0;
		int out = len < ANSWER_LEN ? len : ANSWER_LEN;
		umad_send(port, agent, umad, out, 0, 0);
	}
}
