/*
 * The workloads of scripts/qemu-phases: small, deterministic page-allocator loads run inside a
 * capture-kmem window in a busybox guest. Static, no libraries beyond libc:
 *
 *     gcc -static -O2 -pthread -o kmem-phases scripts/kmem-phases.c
 *
 *   kmem-phases prodcons CPU_A CPU_B MIB CHUNK_KIB
 *       a producer thread pinned to CPU_A maps anonymous memory (MADV_NOHUGEPAGE: order-0
 *       faults) CHUNK_KIB at a time, touches every page, and passes the chunk through a pipe to
 *       a consumer thread pinned to CPU_B, which unmaps it: the pages are allocated on CPU_A and
 *       freed on CPU_B (the free path runs on the unmapping CPU). MIB in all.
 *   kmem-phases thp MIB [madvise]
 *       maps MIB of 2 MiB-aligned anonymous memory, with MADV_HUGEPAGE when `madvise` is given,
 *       touches one byte a page (THP faults where the kernel's `enabled` allows them), unmaps.
 *   kmem-phases pressure TAIL_MIB MARGIN_MIB [CPU...]
 *       reads /proc/zoneinfo and allocates what takes every zone halfway between its min and
 *       low watermarks (usable_pages), less MARGIN_MIB: all but the last TAIL_MIB as
 *       THP-eligible memory without MADV_HUGEPAGE
 *       (with enabled=always: few, large faults that never reclaim or compact), the
 *       last TAIL_MIB with MADV_NOHUGEPAGE (order-0 faults into the low watermark: kswapd
 *       wakes); a page-table page per 2 MiB counted. Re-reads /proc/zoneinfo every 4 MiB (1 MiB
 *       in the last 16 MiB) and stops early once every zone is halfway, or all are 4 MiB
 *       above their min watermarks (protection added), so that no allocation needs direct
 *       reclaim (there is no swap: that would be the OOM killer). Holds 1 s, unmaps, and prints what it did. With
 *       CPUs, each 4 MiB step runs pinned to the next of them in turn: on two nodes, THP faults
 *       are node-local (__GFP_THISNODE), so one CPU alone would fill the other node with order-0
 *       pages (450k frees at 4 GiB: a lost trace).
 *   kmem-phases burst CPU MIB
 *       on CPU, maps MIB of order-0 anonymous memory, touches it and unmaps it.
 *
 * Prints one line of what it did on stdout; exit status 1 with a message on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096UL
#define HPAGE (2UL << 20)

static void die(const char *what)
{
	fprintf(stderr, "kmem-phases: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

static unsigned long num(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || end == s) {
		fprintf(stderr, "kmem-phases: %s: not a number: %s\n", what, s);
		exit(1);
	}
	return v;
}

/* len bytes of anonymous memory, aligned to align (0: as mmap places it), with advice (0: none). */
static char *map(unsigned long len, unsigned long align, int advice)
{
	char *p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	char *a = p;
	if (align) {
		a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
		if (a > p && munmap(p, a - p))
			die("munmap head");
		if (munmap(a + len, (p + len + align) - (a + len)))
			die("munmap tail");
	}
	if (advice && madvise(a, len, advice))
		die("madvise");
	return a;
}

static void touch(char *p, unsigned long len)
{
	for (unsigned long off = 0; off < len; off += PAGE)
		p[off] = 1;
}

struct pc {
	int fd[2];
	int cpu_a, cpu_b;
	unsigned long chunks, chunk;
};

static void *consumer(void *arg)
{
	struct pc *pc = arg;
	pin(pc->cpu_b);
	for (unsigned long i = 0; i < pc->chunks; i++) {
		char *p;
		if (read(pc->fd[0], &p, sizeof(p)) != sizeof(p))
			die("read pipe");
		if (munmap(p, pc->chunk))
			die("munmap");
	}
	return NULL;
}

static int prodcons(int argc, char **argv)
{
	if (argc != 6)
		return fprintf(stderr, "usage: kmem-phases prodcons CPU_A CPU_B MIB CHUNK_KIB\n"), 1;
	struct pc pc;
	pc.cpu_a = num(argv[2], "CPU_A");
	pc.cpu_b = num(argv[3], "CPU_B");
	unsigned long mib = num(argv[4], "MIB");
	pc.chunk = num(argv[5], "CHUNK_KIB") << 10;
	if (pc.chunk == 0 || pc.chunk % PAGE)
		return fprintf(stderr, "kmem-phases: CHUNK_KIB must be a multiple of 4\n"), 1;
	pc.chunks = (mib << 20) / pc.chunk;
	if (pipe(pc.fd))
		die("pipe");
	pthread_t t;
	if (pthread_create(&t, NULL, consumer, &pc))
		die("pthread_create");
	pin(pc.cpu_a);
	for (unsigned long i = 0; i < pc.chunks; i++) {
		char *p = map(pc.chunk, 0, MADV_NOHUGEPAGE);
		touch(p, pc.chunk);
		if (write(pc.fd[1], &p, sizeof(p)) != sizeof(p))
			die("write pipe");
	}
	pthread_join(t, NULL);
	printf("prodcons: %lu chunks of %lu KiB allocated on CPU %d, freed on CPU %d\n", pc.chunks,
	       pc.chunk >> 10, pc.cpu_a, pc.cpu_b);
	return 0;
}

static int thp(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "madvise")))
		return fprintf(stderr, "usage: kmem-phases thp MIB [madvise]\n"), 1;
	unsigned long len = num(argv[2], "MIB") << 20;
	char *p = map(len, HPAGE, argc == 4 ? MADV_HUGEPAGE : 0);
	touch(p, len);
	if (munmap(p, len))
		die("munmap");
	printf("thp: %lu MiB touched%s\n", len >> 20, argc == 4 ? " with MADV_HUGEPAGE" : "");
	return 0;
}

/*
 * Pages a movable allocation can take before every zone is halfway between its min and low
 * watermarks (halfway; else down to min), the lowmem protection against the highest zone's
 * allocations added: per zone, free - (min + low) / 2 - protection. Allocations below low take
 * the slow path, which wakes kswapd (wake_all_kswapds); below min direct reclaim would begin.
 */
static long usable_pages(int halfway)
{
	FILE *f = fopen("/proc/zoneinfo", "r");
	if (!f)
		die("/proc/zoneinfo");
	char line[512];
	long total = 0, free = -1, min = -1, low = -1, prot = -1;
	for (;;) {
		char *got = fgets(line, sizeof(line), f);
		if (!got || !strncmp(line, "Node ", 5)) {
			long floor = (halfway ? (min + low) / 2 : min) + prot;
			if (free >= 0 && min >= 0 && low >= 0 && prot >= 0 && free > floor)
				total += free - floor;
			free = min = low = prot = -1;
			if (!got)
				break;
			continue;
		}
		long v;
		if (free < 0 && sscanf(line, " pages free %ld", &v) == 1)
			free = v;
		else if (min < 0 && sscanf(line, " min %ld", &v) == 1)
			min = v;
		else if (low < 0 && sscanf(line, " low %ld", &v) == 1)
			low = v;
		else if (prot < 0 && !strncmp(line, "        protection: (", 21)) {
			/* The largest entry: the protection against the highest zone's allocations. */
			prot = 0;
			for (char *s = line + 21; *s && *s != ')';) {
				char *end;
				long x = strtol(s, &end, 10);
				if (end == s)
					break;
				if (x > prot)
					prot = x;
				s = end;
				while (*s == ',' || *s == ' ')
					s++;
			}
		}
	}
	fclose(f);
	return total;
}

static long meminfo_kb(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	if (!f)
		die("/proc/meminfo");
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int pressure(int argc, char **argv)
{
	if (argc < 4)
		return fprintf(stderr, "usage: kmem-phases pressure TAIL_MIB MARGIN_MIB [CPU...]\n"), 1;
	int ncpus = argc - 4;
	unsigned long tail = num(argv[2], "TAIL_MIB") << 20;
	unsigned long margin = num(argv[3], "MARGIN_MIB") << 20;
	long usable = usable_pages(1);
	/* Each 2 MiB mapped takes a page-table page as well (a PTE page, or the one a THP
	 * deposits: pgtable_trans_huge_deposit): 512 pages of memory cost 513 free pages. */
	unsigned long room = usable / 513 * 512 * PAGE;
	unsigned long want = room > margin ? room - margin : 0;
	want &= ~(HPAGE - 1);
	if (tail > want)
		tail = want;
	unsigned long bulk = want - tail;
	char *b = map(bulk ? bulk : HPAGE, HPAGE, 0);
	char *t = map(tail ? tail : PAGE, 0, MADV_NOHUGEPAGE);
	unsigned long done = 0, step = 4UL << 20, n = 0;
	int stopped = 0;
	for (unsigned long off = 0, i = 0; off < want && !stopped; off += n, i++) {
		n = want - off < step ? want - off : step;
		/* Round-robin over the CPUs given: each node's memory filled from its own CPUs. */
		if (ncpus)
			pin(num(argv[4 + i % ncpus], "CPU"));
		if (off < bulk)
			touch(b + off, n > bulk - off ? bulk - off : n);
		if (off + n > bulk) {
			unsigned long s = off > bulk ? off - bulk : 0;
			touch(t + s, off + n - bulk - s);
		}
		done = off + n;
		/*
		 * Page tables (a PTE page per 2 MiB mapped at order 0: 15 MB at 8 GiB), slab and
		 * fallbacks to order 0 take memory too, which `want` did not count: at 8 GiB the
		 * fill went past min and the OOM killer ended it (7.2, data/kernel-own/README.md).
		 * Re-read the zones each step: stop once every zone is at or below halfway (the
		 * target itself), or 4 MiB above min in all; 1 MiB steps in the last 16 MiB.
		 */
		long left = usable_pages(1);
		if (left <= 0 || usable_pages(0) < 1024)
			stopped = left <= 0 ? 1 : 2;
		step = left < 4096 ? 1UL << 20 : 4UL << 20;
	}
	long free_kb = meminfo_kb("MemFree");
	sleep(1);
	munmap(b, bulk ? bulk : HPAGE);
	munmap(t, tail ? tail : PAGE);
	printf("pressure: usable %ld pages, want %lu MiB (%lu THP-eligible, %lu order-0), touched %lu "
	       "MiB, MemFree %ld kB at the end%s\n",
	       usable, want >> 20, bulk >> 20, tail >> 20, done >> 20, free_kb,
	       stopped == 1   ? ", stopped halfway between the min and low watermarks"
	       : stopped == 2 ? ", stopped 4 MiB above the min watermarks"
			      : "");
	return 0;
}

static int burst(int argc, char **argv)
{
	if (argc != 4)
		return fprintf(stderr, "usage: kmem-phases burst CPU MIB\n"), 1;
	pin(num(argv[2], "CPU"));
	unsigned long len = num(argv[3], "MIB") << 20;
	char *p = map(len, 0, MADV_NOHUGEPAGE);
	touch(p, len);
	if (munmap(p, len))
		die("munmap");
	printf("burst: %lu MiB on CPU %s\n", len >> 20, argv[2]);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "prodcons"))
		return prodcons(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "thp"))
		return thp(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "pressure"))
		return pressure(argc, argv);
	if (argc >= 2 && !strcmp(argv[1], "burst"))
		return burst(argc, argv);
	fprintf(stderr, "usage: kmem-phases prodcons|thp|pressure|burst ARGS (see the source)\n");
	return 1;
}
