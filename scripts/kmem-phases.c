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
 *   kmem-phases fork CHILDREN PARALLEL KIB
 *       a fork/exec/pipe storm, pinned nowhere: keeps PARALLEL children running until CHILDREN
 *       have run. Each is forked, execs this program as `child KIB` (a new mm: page tables,
 *       the argument and stack pages, a kernel stack at fork), maps and touches KIB of order-0
 *       anonymous memory, writes 64 KiB into a pipe to the parent and exits. The scheduler
 *       places the children on every CPU (fork and exec balancing); the pipe's pages are
 *       freed on the reading parent's CPU, the child's on whichever CPU it exits.
 *   kmem-phases files DIR MIB FILE_KIB CPU_W CPU_R CPU_D
 *       page cache on a tmpfs DIR: on CPU_W writes MIB in files of FILE_KIB (64 KiB writes:
 *       shmem folios, order 0, or THP where DIR is mounted huge=always), sleeps 1 s, re-reads
 *       them on CPU_R, sleeps 1 s, and deletes them on CPU_D (the truncation frees the folios
 *       on the deleting CPU).
 *   kmem-phases sock PAIRS MIB WRITE_KIB SECS
 *       TCP over loopback (brings `lo` up with SIOCSIFFLAGS): PAIRS connections, each a sender
 *       thread pinned to CPU i and a receiver thread pinned to CPU i+1 (mod the CPUs online);
 *       each sender writes MIB, WRITE_KIB at a time, paced over SECS seconds (a sleep after a
 *       write that is ahead of time: under TCG an unpaced 768 MiB took 1.4 s). The data lands in order-3 page fragments (skb_page_frag_refill, SKB_FRAG_PAGE_ORDER) taken
 *       on the sender's CPU and freed on the receiver's once it has read them.
 *   kmem-phases memcg CGROUP MAX_MIB ANON_MIB FILE FILE_MIB SECS CPU
 *       writes MAX_MIB to CGROUP/memory.max, moves itself into CGROUP and onto CPU, maps and
 *       touches ANON_MIB of order-0 anonymous memory, then reads FILE_MIB of FILE (a block
 *       device: clean page cache; from its start again at its end) 64 KiB at a time, paced
 *       over SECS seconds: once the group is at its limit each charge
 *       reclaims the group's own page cache (try_charge -> try_to_free_mem_cgroup_pages) while
 *       the machine has plenty free. Touches the anonymous memory again, unmaps it, and prints
 *       the group's reclaim counts (memory.stat pgscan/pgsteal, memory.events max).
 *   kmem-phases compact MIB
 *       fragments memory: maps and touches MIB of order-0 anonymous memory, frees two pages of
 *       every three (MADV_DONTNEED), sleeps 4 s, writes 1 to /proc/sys/vm/compact_memory (every
 *       zone compacted: the migration scanner moves the pages left, the free scanner isolates
 *       free pages as targets), sleeps 4 s, unmaps. Prints /proc/vmstat's compaction counts.
 *       Not every other page: the free scanner samples a pageblock every `stride` pages, a
 *       power of two that doubles (to COMPACT_CLUSTER_MAX) after each block it took nothing
 *       from (isolate_freepages), so free pages at every other pfn can all be passed over:
 *       compact_zone then ends at the first target it cannot find (-ENOMEM). With every other
 *       page freed, 6.12 migrated 1 page, 7.2 703 and 7619 (one boot each).
 *
 * Prints one line of what it did on stdout; exit status 1 with a message on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <sys/wait.h>
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

#define PIPE_BYTES (64UL << 10)

/* The child of `fork`: KIB of anonymous memory touched, 64 KiB into the pipe on stdout. */
static int child(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: kmem-phases child KIB\n"), 1;
	unsigned long len = num(argv[2], "KIB") << 10;
	char *p = map(len ? len : PAGE, 0, MADV_NOHUGEPAGE);
	touch(p, len);
	static char buf[PIPE_BYTES];
	memset(buf, 'x', sizeof(buf));
	for (unsigned long off = 0; off < sizeof(buf);) {
		ssize_t n = write(1, buf + off, sizeof(buf) - off);
		if (n <= 0)
			die("write pipe");
		off += n;
	}
	return 0;
}

/* Starts one child of `fork`; returns the read end of its stdout pipe. */
static int spawn(const char *self, const char *kib)
{
	int fd[2];
	if (pipe(fd))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (dup2(fd[1], 1) < 0)
			die("dup2");
		close(fd[0]);
		close(fd[1]);
		execl(self, self, "child", kib, (char *)NULL);
		die("execl");
	}
	close(fd[1]);
	return fd[0];
}

/* Reads a child's pipe to its end and reaps it (children end in the order they started). */
static void reap(int fd)
{
	static char buf[PIPE_BYTES];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		die("read pipe");
	close(fd);
	int status;
	if (wait(&status) < 0)
		die("wait");
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "kmem-phases: a child failed (status %d)\n", status);
		exit(1);
	}
}

static int forks(int argc, char **argv)
{
	if (argc != 5)
		return fprintf(stderr, "usage: kmem-phases fork CHILDREN PARALLEL KIB\n"), 1;
	unsigned long children = num(argv[2], "CHILDREN");
	unsigned long par = num(argv[3], "PARALLEL");
	num(argv[4], "KIB");
	if (par == 0 || par > 64)
		return fprintf(stderr, "kmem-phases: PARALLEL must be 1 to 64\n"), 1;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("readlink /proc/self/exe");
	self[n] = 0;
	int fds[64];
	unsigned long started = 0, done = 0;
	for (; started < children && started < par; started++)
		fds[started % par] = spawn(self, argv[4]);
	while (done < started) {
		reap(fds[done % par]);
		done++;
		if (started < children) {
			fds[started % par] = spawn(self, argv[4]);
			started++;
		}
	}
	printf("fork: %lu children of %s KiB each, %lu at a time, on any CPU\n", children, argv[4],
	       par);
	return 0;
}

static int files(int argc, char **argv)
{
	if (argc != 8)
		return fprintf(stderr, "usage: kmem-phases files DIR MIB FILE_KIB CPU_W CPU_R CPU_D\n"),
		       1;
	const char *dir = argv[2];
	unsigned long mib = num(argv[3], "MIB"), file = num(argv[4], "FILE_KIB") << 10;
	if (file == 0 || file % (64UL << 10))
		return fprintf(stderr, "kmem-phases: FILE_KIB must be a multiple of 64\n"), 1;
	unsigned long nfiles = (mib << 20) / file;
	static char buf[64UL << 10];
	memset(buf, 'f', sizeof(buf));
	char path[4096];
	pin(num(argv[5], "CPU_W"));
	for (unsigned long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%05lu", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			die(path);
		for (unsigned long off = 0; off < file; off += sizeof(buf))
			if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
				die("write");
		close(fd);
	}
	sleep(1);
	pin(num(argv[6], "CPU_R"));
	for (unsigned long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%05lu", dir, i);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			die(path);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	sleep(1);
	pin(num(argv[7], "CPU_D"));
	for (unsigned long i = 0; i < nfiles; i++) {
		snprintf(path, sizeof(path), "%s/f%05lu", dir, i);
		if (unlink(path))
			die(path);
	}
	printf("files: %lu files of %lu KiB in %s written on CPU %s, read on CPU %s, deleted on "
	       "CPU %s\n",
	       nfiles, file >> 10, dir, argv[5], argv[6], argv[7]);
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Brings the loopback interface up (SIOCGIFFLAGS, then SIOCSIFFLAGS with IFF_UP). */
static void lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0)
		die("socket");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr))
		die("SIOCGIFFLAGS lo");
	if (!(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr))
			die("SIOCSIFFLAGS lo");
	}
	close(s);
}

struct pair {
	int snd, rcv;		/* the connected sockets: the sender's and the receiver's end */
	int cpu_s, cpu_r;
	unsigned long limit, wsize;
	double secs;
	unsigned long sent, got;
};

/* Sleeps until `done` of `total` is due, `secs` seconds spreading all of it from `t0`. */
static void pace(double t0, unsigned long done, unsigned long total, double secs)
{
	double due = t0 + secs * done / total, t = now();
	if (due > t)
		usleep((useconds_t)((due - t) * 1e6));
}

static void *sender(void *arg)
{
	struct pair *p = arg;
	pin(p->cpu_s);
	char *buf = map(p->wsize, 0, MADV_NOHUGEPAGE);
	memset(buf, 's', p->wsize);
	double t0 = now();
	while (p->sent < p->limit) {
		ssize_t n = write(p->snd, buf, p->wsize);
		if (n <= 0)
			die("write socket");
		p->sent += n;
		pace(t0, p->sent, p->limit, p->secs);
	}
	if (shutdown(p->snd, SHUT_WR))
		die("shutdown");
	return NULL;
}

static void *receiver(void *arg)
{
	struct pair *p = arg;
	pin(p->cpu_r);
	char *buf = map(p->wsize, 0, MADV_NOHUGEPAGE);
	ssize_t n;
	while ((n = read(p->rcv, buf, p->wsize)) > 0)
		p->got += n;
	if (n < 0)
		die("read socket");
	return NULL;
}

static int sock(int argc, char **argv)
{
	if (argc != 6)
		return fprintf(stderr, "usage: kmem-phases sock PAIRS MIB WRITE_KIB SECS\n"), 1;
	unsigned long npairs = num(argv[2], "PAIRS");
	unsigned long limit = num(argv[3], "MIB") << 20, wsize = num(argv[4], "WRITE_KIB") << 10;
	double secs = num(argv[5], "SECS");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (npairs == 0 || npairs > 16 || wsize == 0 || ncpu < 1)
		return fprintf(stderr, "kmem-phases: PAIRS 1 to 16, WRITE_KIB above 0\n"), 1;
	lo_up();
	int l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0)
		die("socket");
	struct sockaddr_in a;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t alen = sizeof(a);
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 16) ||
	    getsockname(l, (struct sockaddr *)&a, &alen))
		die("bind/listen");
	struct pair pairs[16];
	pthread_t ts[32];
	for (unsigned long i = 0; i < npairs; i++) {
		struct pair *p = &pairs[i];
		memset(p, 0, sizeof(*p));
		p->snd = socket(AF_INET, SOCK_STREAM, 0);
		if (p->snd < 0 || connect(p->snd, (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		p->rcv = accept(l, NULL, NULL);
		if (p->rcv < 0)
			die("accept");
		p->cpu_s = i % ncpu;
		p->cpu_r = (i + 1) % ncpu;
		p->limit = limit;
		p->wsize = wsize;
		p->secs = secs;
	}
	double t0 = now();
	for (unsigned long i = 0; i < npairs; i++)
		if (pthread_create(&ts[2 * i], NULL, receiver, &pairs[i]) ||
		    pthread_create(&ts[2 * i + 1], NULL, sender, &pairs[i]))
			die("pthread_create");
	unsigned long total = 0;
	for (unsigned long i = 0; i < 2 * npairs; i++)
		pthread_join(ts[i], NULL);
	for (unsigned long i = 0; i < npairs; i++) {
		if (pairs[i].got != pairs[i].sent)
			return fprintf(stderr, "kmem-phases: pair %lu sent %lu, got %lu\n", i,
				       pairs[i].sent, pairs[i].got),
			       1;
		total += pairs[i].got;
		close(pairs[i].snd);
		close(pairs[i].rcv);
	}
	close(l);
	printf("sock: %lu TCP pairs over lo (CPU i -> i+1), %lu MiB in %lu KiB writes in %.1f s\n",
	       npairs, total >> 20, wsize >> 10, now() - t0);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	if (fd < 0)
		die(path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

/* The value of the line starting with KEY followed by a space in file PATH, or -1. */
static long keyed(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[256];
	long v = -1;
	size_t n = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ' ') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static int memcg(int argc, char **argv)
{
	if (argc != 9)
		return fprintf(stderr, "usage: kmem-phases memcg CGROUP MAX_MIB ANON_MIB FILE FILE_MIB "
				       "SECS CPU\n"),
		       1;
	const char *cg = argv[2];
	unsigned long max = num(argv[3], "MAX_MIB") << 20, anon = num(argv[4], "ANON_MIB") << 20;
	unsigned long want = num(argv[6], "FILE_MIB") << 20;
	double secs = num(argv[7], "SECS");
	char path[4096], text[64];
	snprintf(path, sizeof(path), "%s/memory.max", cg);
	snprintf(text, sizeof(text), "%lu\n", max);
	write_file(path, text);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	write_file(path, "0\n");
	pin(num(argv[8], "CPU"));
	char *p = map(anon ? anon : PAGE, 0, MADV_NOHUGEPAGE);
	touch(p, anon);
	int fd = open(argv[5], O_RDONLY);
	if (fd < 0)
		die(argv[5]);
	static char buf[64UL << 10];
	unsigned long got = 0;
	double t0 = now();
	while (got < want) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0)
			die("read");
		if (n == 0 && got == 0)
			break;
		if (n == 0 && lseek(fd, 0, SEEK_SET))
			die("lseek");
		got += n;
		pace(t0, got, want, secs);
	}
	close(fd);
	touch(p, anon);
	munmap(p, anon ? anon : PAGE);
	snprintf(path, sizeof(path), "%s/memory.stat", cg);
	long scan = keyed(path, "pgscan"), steal = keyed(path, "pgsteal");
	snprintf(path, sizeof(path), "%s/memory.events", cg);
	long maxev = keyed(path, "max"), oom = keyed(path, "oom");
	printf("memcg: memory.max %lu MiB, %lu MiB anonymous, %lu MiB of %s read in %.1f s; pgscan "
	       "%ld pgsteal %ld, events max %ld oom %ld\n",
	       max >> 20, anon >> 20, got >> 20, argv[5], now() - t0, scan, steal, maxev, oom);
	return 0;
}

static int compact(int argc, char **argv)
{
	if (argc != 3)
		return fprintf(stderr, "usage: kmem-phases compact MIB\n"), 1;
	unsigned long len = num(argv[2], "MIB") << 20;
	static const char *const keys[] = { "compact_migrate_scanned", "compact_free_scanned",
					    "compact_isolated",	       "compact_stall",
					    "compact_success",	       "pgmigrate_success" };
	long before[6];
	for (int i = 0; i < 6; i++)
		before[i] = keyed("/proc/vmstat", keys[i]);
	char *p = map(len, 0, MADV_NOHUGEPAGE);
	touch(p, len);
	for (unsigned long off = PAGE; off < len; off += 3 * PAGE)
		if (madvise(p + off, off + 2 * PAGE <= len ? 2 * PAGE : PAGE, MADV_DONTNEED))
			die("madvise DONTNEED");
	sleep(4);
	double t0 = now();
	write_file("/proc/sys/vm/compact_memory", "1\n");
	double took = now() - t0;
	sleep(4);
	munmap(p, len);
	printf("compact: %lu MiB touched, two pages of three freed, compact_memory took %.1f s;",
	       len >> 20, took);
	for (int i = 0; i < 6; i++)
		printf(" %s +%ld", keys[i], keyed("/proc/vmstat", keys[i]) - before[i]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} cmds[] = {
		{ "prodcons", prodcons }, { "thp", thp },     { "pressure", pressure }, { "burst", burst },
		{ "fork", forks },	  { "child", child }, { "files", files },
		{ "sock", sock },	  { "memcg", memcg }, { "compact", compact },
	};
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc >= 2 && i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc, argv);
	fprintf(stderr,
		"usage: kmem-phases prodcons|thp|pressure|burst|fork|files|sock|memcg|compact ARGS (see "
		"the source)\n");
	return 1;
}
