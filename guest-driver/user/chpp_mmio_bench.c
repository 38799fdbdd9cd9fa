// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * chpp-mmio-bench: the guest baseline of scripts/bench.sh --verbs, the cost
 * of a null MMIO exit: N 32-bit reads, then N writes, of a register that
 * does nothing (CHPP_REG_SCRATCH in BAR0, mapped through the function's
 * sysfs resource0 before a driver claims it). Prints
 *   read_ns=R write_ns=W count=N
 *
 *   chpp-mmio-bench /sys/bus/pci/devices/BDF/resource0 [COUNT]
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "chpp_datapath.h"

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long i, count = argc > 2 ? atol(argv[2]) : 100000;
	uint8_t *reg;
	double t0, rd, wr;
	uint32_t sum = 0;
	void *bar;
	int fd;

	if (argc < 2 || count < 1) {
		fprintf(stderr, "usage: chpp-mmio-bench RESOURCE0 [COUNT]\n");
		return 2;
	}
	fd = open(argv[1], O_RDWR | O_SYNC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	bar = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (bar == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	reg = (uint8_t *)bar + CHPP_REG_SCRATCH;
	t0 = now_ns();
	for (i = 0; i < count; i++)
		sum += chpp_mmio_read32(reg);
	rd = (now_ns() - t0) / count;
	t0 = now_ns();
	for (i = 0; i < count; i++)
		chpp_mmio_write32(reg, (uint32_t)i);
	wr = (now_ns() - t0) / count;
	chpp_mmio_write32(reg, 0);
	printf("read_ns=%.0f write_ns=%.0f count=%ld sum=%u\n", rd, wr, count,
	       sum);
	return 0;
}
