/*
 * rdma_getaddrinfo_probe: asks the real librdmacm for a route, the way
 * rdma_cm applications do, and prints what librdmacm got from the ibacm
 * service (local-sa in the conformance tests).
 *
 *   rdma_getaddrinfo_probe [--numeric] [--src IP] DEST
 *       rdma_getaddrinfo(DEST, NULL, hints): DEST is a name or an IP;
 *       --numeric sets RAI_NUMERICHOST (librdmacm then asks with NODELAY);
 *       --src gives the source address in the hints.
 *   rdma_getaddrinfo_probe --route-only --src IP DEST-IP
 *       what rdma_resolve_route() asks on InfiniBand: node and service
 *       NULL, RAI_ROUTEONLY, ai_src_addr and ai_dst_addr set.
 *   --repeat N (with either form) asks N times first and prints
 *       "repeated N SECONDS" (wall-clock seconds for the N calls).
 *
 * Output, one line per path record librdmacm returned in ai_route:
 *   path FLAGS HEX          (the ibv_path_data flags, the 64-byte record)
 * or "no route" when librdmacm returned none. Exit 0 when
 * rdma_getaddrinfo succeeded, 1 with a message otherwise, 2 on bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/sa.h>
#include <rdma/rdma_cma.h>

/* librdmacm's private flag for rdma_resolve_route's request (librdmacm/cma.h). */
#define RAI_ROUTEONLY 0x01000000

static int parse_ip(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)out;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		*len = sizeof(*in4);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
		return 0;
	}
	return -1;
}

static int usage(void)
{
	fprintf(stderr, "usage: rdma_getaddrinfo_probe [--numeric] [--route-only] [--src IP] DEST\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage src, dst;
	socklen_t src_len = 0, dst_len = 0;
	struct rdma_addrinfo hints, *res = NULL;
	int numeric = 0, route_only = 0, i, ret;
	long repeat = 0, r;
	struct timespec start, end;
	const char *src_text = NULL, *dest = NULL;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--numeric"))
			numeric = 1;
		else if (!strcmp(argv[i], "--route-only"))
			route_only = 1;
		else if (!strcmp(argv[i], "--src") && i + 1 < argc)
			src_text = argv[++i];
		else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
			repeat = atol(argv[++i]);
		else if (argv[i][0] != '-' && !dest)
			dest = argv[i];
		else
			return usage();
	}
	if (!dest)
		return usage();

	memset(&hints, 0, sizeof(hints));
	hints.ai_port_space = RDMA_PS_TCP;
	if (numeric)
		hints.ai_flags |= RAI_NUMERICHOST;
	if (src_text) {
		if (parse_ip(src_text, &src, &src_len)) {
			fprintf(stderr, "not an IP address: %s\n", src_text);
			return 2;
		}
		hints.ai_src_addr = (struct sockaddr *)&src;
		hints.ai_src_len = src_len;
	}
	if (route_only) {
		if (!src_text || parse_ip(dest, &dst, &dst_len)) {
			fprintf(stderr, "--route-only needs --src IP and a destination IP\n");
			return 2;
		}
		hints.ai_flags |= RAI_ROUTEONLY;
		hints.ai_dst_addr = (struct sockaddr *)&dst;
		hints.ai_dst_len = dst_len;
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (r = 0; r < repeat; r++) {
		if (rdma_getaddrinfo(route_only ? NULL : dest, NULL, &hints, &res)) {
			fprintf(stderr, "rdma_getaddrinfo (call %ld): %s\n", r + 1, strerror(errno));
			return 1;
		}
		rdma_freeaddrinfo(res);
	}
	clock_gettime(CLOCK_MONOTONIC, &end);
	if (repeat)
		printf("repeated %ld %.6f\n", repeat,
		       (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9);
	ret = rdma_getaddrinfo(route_only ? NULL : dest, NULL, &hints, &res);
	if (ret) {
		fprintf(stderr, "rdma_getaddrinfo: %s\n", strerror(errno));
		return 1;
	}
	if (!res->ai_route_len) {
		printf("no route\n");
	} else {
		struct ibv_path_data *paths = res->ai_route;
		size_t n = res->ai_route_len / sizeof(*paths), p, b;

		for (p = 0; p < n; p++) {
			const unsigned char *bytes = (const unsigned char *)&paths[p].path;

			printf("path 0x%x ", paths[p].flags);
			for (b = 0; b < sizeof(paths[p].path); b++)
				printf("%02x", bytes[b]);
			printf("\n");
		}
	}
	rdma_freeaddrinfo(res);
	return 0;
}
