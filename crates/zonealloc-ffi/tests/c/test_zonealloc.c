/* The C test program of libzonealloc: every bad input returns its error code and leaves the
 * zone or arena intact (za_*_check passes, the counters do not move); the good paths work;
 * threads free each other's arena blocks. Exit status: the number of failed checks.
 * Built and run by crates/zonealloc-ffi/tests/c.rs (`cargo test --workspace`), also under
 * AddressSanitizer when the compiler supports it. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zonealloc.h"

static int failures;
static int checks;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        checks++;                                                                    \
        if (!(cond)) {                                                               \
            failures++;                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                            \
    } while (0)

#define EXPECT(call, want)                                                          \
    do {                                                                            \
        za_status got_ = (call);                                                    \
        checks++;                                                                   \
        if (got_ != (want)) {                                                       \
            failures++;                                                             \
            fprintf(stderr, "%s:%d: %s returned %d (%s), expected %s\n", __FILE__, \
                    __LINE__, #call, (int)got_, za_strerror((int32_t)got_), #want); \
        }                                                                           \
    } while (0)

static za_stats zone_stats(const za_zone *z) {
    za_stats s;
    memset(&s, 0, sizeof s);
    EXPECT(za_zone_stats(z, &s), ZA_OK);
    return s;
}

static za_stats arena_stats(const za_arena *a) {
    za_stats s;
    memset(&s, 0, sizeof s);
    EXPECT(za_arena_stats(a, &s), ZA_OK);
    return s;
}

static void test_strerror(void) {
    for (int32_t c = ZA_OK; c <= ZA_ERR_SPAN_OVERFLOW; c++) {
        const char *m = za_strerror(c);
        CHECK(m != NULL && strlen(m) > 0 && strcmp(m, "unknown status") != 0);
    }
    CHECK(strcmp(za_strerror(-1), "unknown status") == 0);
    CHECK(strcmp(za_strerror(ZA_ERR_SPAN_OVERFLOW + 1), "unknown status") == 0);
    CHECK(strstr(za_strerror(ZA_ERR_NO_HUGE_PAGES), "vm.nr_hugepages") != NULL);
}

static void test_zone_config_errors(void) {
    za_zone_config c;
    za_zone *z = NULL;
    EXPECT(za_zone_config_default(NULL), ZA_ERR_NULL);
    EXPECT(za_zone_config_default(&c), ZA_OK);
    EXPECT(za_zone_create(NULL, &z), ZA_ERR_NULL);
    EXPECT(za_zone_create(&c, NULL), ZA_ERR_NULL);

    za_zone_config bad = c;
    bad.pageblock_order = bad.max_order + 1;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_CONFIG);
    bad = c;
    bad.max_order = 300;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_CONFIG);
    bad = c;
    bad.end_pfn = bad.start_pfn;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_CONFIG);
    /* Issue 13: spans ending near 2^64 wrapped (ZA_ERR_PANIC in debug, a hang in release). */
    bad = c;
    bad.start_pfn = 0;
    bad.end_pfn = UINT64_MAX;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_SPAN_OVERFLOW);
    bad.start_pfn = UINT64_MAX - 4096;
    bad.end_pfn = UINT64_MAX - 2048;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_SPAN_OVERFLOW);
    bad = c;
    bad.page_size = 3000;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_CONFIG);
    bad = c;
    bad.flags = 0x80;
    EXPECT(za_zone_create(&bad, &z), ZA_ERR_INVALID_ARGUMENT);
    CHECK(z == NULL); /* untouched on error */
    EXPECT(za_zone_destroy(NULL), ZA_ERR_NULL);

    /* cpus = 0: buddy only, no per-CPU lists. */
    za_zone_config buddy_only = c;
    buddy_only.cpus = 0;
    buddy_only.flags = ZA_ZONE_WATERMARKS;
    EXPECT(za_zone_create(&buddy_only, &z), ZA_OK);
    uint64_t pfn = 0;
    EXPECT(za_zone_alloc(z, 0, 2, &pfn), ZA_OK);
    EXPECT(za_zone_free(z, pfn, 0), ZA_OK);
    za_stats st = zone_stats(z);
    CHECK(st.pcp_pages == 0 && st.free_pages == st.managed_pages);
    EXPECT(za_zone_check(z), ZA_OK);
    EXPECT(za_zone_destroy(z), ZA_OK);
}

static void test_zone(void) {
    za_zone_config c;
    za_zone *z = NULL;
    EXPECT(za_zone_config_default(&c), ZA_OK);
    c.start_pfn = 0x1000;
    c.end_pfn = 0x1000 + 4096;
    c.cpus = 2;
    EXPECT(za_zone_create(&c, &z), ZA_OK);
    CHECK(z != NULL);
    if (!z) return;

    uint64_t pfn = 0, small = 0;
    EXPECT(za_zone_alloc(z, 3, 1, &pfn), ZA_OK);
    CHECK(pfn % 8 == 0 && pfn >= c.start_pfn && pfn < c.end_pfn);
    EXPECT(za_zone_alloc(z, 0, 0, &small), ZA_OK);
    EXPECT(za_zone_check(z), ZA_OK);

    za_stats before = zone_stats(z);
    CHECK(before.managed_pages == 4096);
    /* Every bad call: an error code, nothing changed. */
    EXPECT(za_zone_alloc(NULL, 0, 1, &pfn), ZA_ERR_NULL);
    EXPECT(za_zone_alloc(z, 0, 1, NULL), ZA_ERR_NULL);
    EXPECT(za_zone_alloc(z, 11, 1, &pfn), ZA_ERR_ORDER_TOO_LARGE);
    EXPECT(za_zone_alloc(z, 300, 1, &pfn), ZA_ERR_ORDER_TOO_LARGE);
    EXPECT(za_zone_alloc(z, 0, 7, &pfn), ZA_ERR_INVALID_MIGRATETYPE);
    EXPECT(za_zone_alloc(z, 0, 3, &pfn), ZA_ERR_INVALID_MIGRATETYPE); /* HighAtomic */
    EXPECT(za_zone_free(z, pfn + 1, 0), ZA_ERR_NOT_BLOCK_HEAD);
    EXPECT(za_zone_free(z, pfn, 2), ZA_ERR_WRONG_ORDER);
    EXPECT(za_zone_free(z, pfn + 2, 1), ZA_ERR_NOT_BLOCK_HEAD);
    EXPECT(za_zone_free(z, pfn + 1, 1), ZA_ERR_BLOCK_MISALIGNED);
    EXPECT(za_zone_free(z, pfn, 99), ZA_ERR_ORDER_TOO_LARGE);
    EXPECT(za_zone_free(z, c.end_pfn + 8, 3), ZA_ERR_OUT_OF_ZONE);
    EXPECT(za_zone_free(z, 0, 0), ZA_ERR_OUT_OF_ZONE);
    EXPECT(za_zone_free(NULL, pfn, 3), ZA_ERR_NULL);
    EXPECT(za_zone_free((za_zone *)((char *)z + 1), pfn, 3), ZA_ERR_MISALIGNED);
    {
        /* A foreign pointer: readable memory that is not a zone. */
        uint64_t not_a_zone[16];
        memset(not_a_zone, 0, sizeof not_a_zone);
        EXPECT(za_zone_free((za_zone *)not_a_zone, pfn, 3), ZA_ERR_BAD_HANDLE);
        EXPECT(za_zone_destroy((za_zone *)not_a_zone), ZA_ERR_BAD_HANDLE);
    }
    EXPECT(za_zone_check(z), ZA_OK);
    za_stats after = zone_stats(z);
    CHECK(memcmp(&before, &after, sizeof before) == 0);

    EXPECT(za_zone_free(z, pfn, 3), ZA_OK);
    EXPECT(za_zone_free(z, pfn, 3), ZA_ERR_DOUBLE_FREE);
    EXPECT(za_zone_free(z, small, 0), ZA_OK);
    EXPECT(za_zone_free(z, small, 0), ZA_ERR_DOUBLE_FREE);

    /* Exhaust the zone: out of memory is an error code, not a crash. */
    uint64_t blocks[4];
    for (int i = 0; i < 4; i++) EXPECT(za_zone_alloc(z, 10, 1, &blocks[i]), ZA_OK);
    EXPECT(za_zone_alloc(z, 0, 1, &pfn), ZA_ERR_OUT_OF_MEMORY);
    for (int i = 0; i < 4; i++) EXPECT(za_zone_free(z, blocks[i], 10), ZA_OK);

    uint32_t pending = 7;
    EXPECT(za_zone_tick(z, &pending), ZA_OK);
    CHECK(pending == 0 || pending == 1);
    EXPECT(za_zone_tick(z, NULL), ZA_OK);
    EXPECT(za_zone_drain(z), ZA_OK);
    EXPECT(za_zone_drain(NULL), ZA_ERR_NULL);
    za_stats end = zone_stats(z);
    CHECK(end.free_pages == 4096 && end.pcp_pages == 0);
    EXPECT(za_zone_stats(z, NULL), ZA_ERR_NULL);

    /* Text into caller buffers. */
    size_t needed = 0;
    EXPECT(za_zone_buddyinfo(z, NULL, 0, &needed), ZA_ERR_BUFFER_TOO_SMALL);
    CHECK(needed > 1);
    char tiny[4] = {'x', 'x', 'x', 'x'};
    EXPECT(za_zone_buddyinfo(z, tiny, sizeof tiny, &needed), ZA_ERR_BUFFER_TOO_SMALL);
    CHECK(tiny[0] == 'x'); /* nothing written */
    EXPECT(za_zone_buddyinfo(z, NULL, 16, &needed), ZA_ERR_NULL);
    char buf[4096];
    EXPECT(za_zone_buddyinfo(z, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strlen(buf) + 1 == needed);
    CHECK(strncmp(buf, "Node 0, zone", 12) == 0);
    EXPECT(za_zone_buddyinfo(z, buf, sizeof buf, NULL), ZA_OK);
    EXPECT(za_zone_zoneinfo(z, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strstr(buf, "pages free") != NULL && strstr(buf, "pagesets") != NULL);

    EXPECT(za_zone_check(z), ZA_OK);
    EXPECT(za_zone_destroy(z), ZA_OK);
}

struct owned {
    za_arena *arena;
    void *ptr[64];
    uint32_t order[64];
    int n;
    int bad_frees;
};

static void *alloc_owned(void *p) {
    struct owned *o = p;
    for (int i = 0; i < 64; i++) {
        uint32_t order = (uint32_t)(i % 3);
        void *b = NULL;
        if (za_arena_alloc(o->arena, order, 1, &b) == ZA_OK) {
            memset(b, 0x40 + (i & 15), (size_t)4096 << order);
            o->ptr[o->n] = b;
            o->order[o->n] = order;
            o->n++;
        }
    }
    return NULL;
}

static void *free_owned(void *p) {
    struct owned *o = p;
    for (int i = 0; i < o->n; i++) {
        if (za_arena_free(o->arena, o->ptr[i], o->order[i]) != ZA_OK) o->bad_frees++;
    }
    return NULL;
}

static void test_arena_threads(za_arena *a) {
    struct owned o[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        memset(&o[i], 0, sizeof o[i]);
        o[i].arena = a;
        CHECK(pthread_create(&t[i], NULL, alloc_owned, &o[i]) == 0);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK(o[0].n == 64 && o[1].n == 64);
    /* No two owners: thread 0's blocks still hold thread 0's fill. */
    for (int i = 0; i < o[0].n; i++) {
        const unsigned char *b = o[0].ptr[i];
        size_t len = (size_t)4096 << o[0].order[i];
        int ok = 1;
        for (size_t k = 0; k < len; k++) ok &= b[k] == (unsigned char)(0x40 + (i & 15));
        CHECK(ok);
    }
    /* Each thread frees the other's blocks. */
    struct owned swapped[2] = {o[1], o[0]};
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&t[i], NULL, free_owned, &swapped[i]) == 0);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK(swapped[0].bad_frees == 0 && swapped[1].bad_frees == 0);
    EXPECT(za_arena_check(a), ZA_OK);
}

static void test_arena(void) {
    za_arena_config c;
    za_arena *a = NULL;
    EXPECT(za_arena_config_default(NULL), ZA_ERR_NULL);
    EXPECT(za_arena_config_default(&c), ZA_OK);
    za_arena_config bad = c;
    bad.flags = 0x100;
    EXPECT(za_arena_create(&bad, &a), ZA_ERR_INVALID_ARGUMENT);
    bad = c;
    bad.flags = ZA_ARENA_THP | ZA_ARENA_HUGETLB;
    EXPECT(za_arena_create(&bad, &a), ZA_ERR_INVALID_ARGUMENT);
    bad = c;
    bad.pages = 0;
    EXPECT(za_arena_create(&bad, &a), ZA_ERR_CONFIG);
    bad = c;
    bad.page_size = 1024;
    EXPECT(za_arena_create(&bad, &a), ZA_ERR_CONFIG);
    EXPECT(za_arena_create(NULL, &a), ZA_ERR_NULL);
    CHECK(a == NULL);
    bad = c;
    bad.flags = ZA_ARENA_HUGETLB;
    {
        za_status s = za_arena_create(&bad, &a);
        CHECK(s == ZA_OK || s == ZA_ERR_NO_HUGE_PAGES);
        if (s == ZA_OK) EXPECT(za_arena_destroy(a), ZA_OK);
        a = NULL;
    }

    c.flags = ZA_ARENA_POISON;
    c.cpus = 1; /* one CPU: a freed page is the next one handed out */
    EXPECT(za_arena_create(&c, &a), ZA_OK);
    CHECK(a != NULL);
    if (!a) return;

    void *p = NULL;
    EXPECT(za_arena_alloc(a, 2, 1, &p), ZA_OK);
    CHECK(p != NULL && (uintptr_t)p % (4 * 4096) == 0);
    memset(p, 0x33, 4 * 4096);
    EXPECT(za_arena_alloc(a, 0, 1, NULL), ZA_ERR_NULL);
    EXPECT(za_arena_alloc(NULL, 0, 1, &p), ZA_ERR_NULL);
    {
        void *q = NULL;
        EXPECT(za_arena_alloc(a, 11, 1, &q), ZA_ERR_ORDER_TOO_LARGE);
        EXPECT(za_arena_alloc(a, 0, 9, &q), ZA_ERR_INVALID_MIGRATETYPE);
        CHECK(q == NULL);
    }

    za_stats before = arena_stats(a);
    int on_stack = 0;
    EXPECT(za_arena_free(a, NULL, 0), ZA_ERR_NULL);
    EXPECT(za_arena_free(a, &on_stack, 0), ZA_ERR_FOREIGN_POINTER);
    EXPECT(za_arena_free(a, (char *)p + 1, 2), ZA_ERR_MISALIGNED);
    EXPECT(za_arena_free(a, (char *)p + 4096, 0), ZA_ERR_NOT_BLOCK_HEAD);
    EXPECT(za_arena_free(a, p, 1), ZA_ERR_WRONG_ORDER);
    EXPECT(za_arena_free(a, p, 77), ZA_ERR_ORDER_TOO_LARGE);
    EXPECT(za_arena_free(a, (char *)p + 4 * 4096, 0), ZA_ERR_DOUBLE_FREE);
    EXPECT(za_arena_free((za_arena *)((char *)a + 4), p, 2), ZA_ERR_MISALIGNED);
    EXPECT(za_arena_free(NULL, p, 2), ZA_ERR_NULL);
    {
        /* Handles of the wrong type are refused by their tag. */
        za_zone_config zc;
        za_zone *z = NULL;
        EXPECT(za_zone_config_default(&zc), ZA_OK);
        EXPECT(za_zone_create(&zc, &z), ZA_OK);
        EXPECT(za_arena_free((za_arena *)z, p, 2), ZA_ERR_BAD_HANDLE);
        EXPECT(za_zone_drain((za_zone *)a), ZA_ERR_BAD_HANDLE);
        EXPECT(za_zone_destroy(z), ZA_OK);
    }
    EXPECT(za_arena_check(a), ZA_OK);
    za_stats after = arena_stats(a);
    CHECK(memcmp(&before, &after, sizeof before) == 0);
    /* A refused free wrote nothing: the block still holds its fill, not poison. */
    CHECK(((unsigned char *)p)[0] == 0x33 && ((unsigned char *)p)[4 * 4096 - 1] == 0x33);

    EXPECT(za_arena_free(a, p, 2), ZA_OK);
    EXPECT(za_arena_free(a, p, 2), ZA_ERR_DOUBLE_FREE);

    /* Write after free, reported when the page is allocated again. */
    void *r = NULL;
    EXPECT(za_arena_alloc(a, 0, 1, &r), ZA_OK);
    EXPECT(za_arena_free(a, r, 0), ZA_OK);
    CHECK(((unsigned char *)r)[0] == 0xaa); /* poisoned */
    ((unsigned char *)r)[10] = 1;           /* the bug */
    void *again = NULL;
    EXPECT(za_arena_alloc(a, 0, 1, &again), ZA_OK);
    CHECK(again == r);
    CHECK(arena_stats(a).poison_reports == 1);
    EXPECT(za_arena_free(a, again, 0), ZA_OK);

    char buf[8192];
    size_t needed = 0;
    EXPECT(za_arena_buddyinfo(a, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strncmp(buf, "Node 0, zone", 12) == 0);
    EXPECT(za_arena_zoneinfo(a, buf, 8, &needed), ZA_ERR_BUFFER_TOO_SMALL);
    EXPECT(za_arena_zoneinfo(a, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strstr(buf, "managed") != NULL);
    EXPECT(za_arena_tick(a, NULL), ZA_OK);

    test_arena_threads(a);

    EXPECT(za_arena_drain(a), ZA_OK);
    za_stats end = arena_stats(a);
    CHECK(end.free_pages == end.managed_pages);
    EXPECT(za_arena_check(a), ZA_OK);
    EXPECT(za_arena_destroy(a), ZA_OK);
    EXPECT(za_arena_destroy(NULL), ZA_ERR_NULL);
}

/* Issue 13: libzonealloc prints no panic and keeps the message; no call has panicked here, so
 * the message is empty, copied with the buffer protocol of the text functions. */
static void test_last_panic_message(void) {
    size_t needed = 0;
    EXPECT(za_last_panic_message(NULL, 0, &needed), ZA_ERR_BUFFER_TOO_SMALL);
    CHECK(needed == 1);
    char buf[8] = "xxxxxxx";
    EXPECT(za_last_panic_message(NULL, 8, NULL), ZA_ERR_NULL);
    EXPECT(za_last_panic_message(buf, sizeof buf, &needed), ZA_OK);
    CHECK(buf[0] == '\0' && needed == 1);
    CHECK(strstr(za_strerror(ZA_ERR_PANIC), "za_last_panic_message") != NULL);
}

/* Issue 30: a machine of two NUMA nodes. Node 0: 16..80 MiB (DMA32), CPUs 0, 1; node 1: 64 MiB
 * at 4 GiB (Normal), CPUs 2, 3; SLIT 10 20 / 20 10. */
static za_machine_config machine_config(const za_node_region *r, const uint32_t *d,
                                        const uint32_t *cpu_node) {
    za_machine_config c;
    memset(&c, 0, sizeof c);
    c.regions = r;
    c.region_count = 2;
    c.nodes = 2;
    c.distances = d;
    c.cpus = 4;
    c.cpu_node = cpu_node;
    c.flags = ZA_ZONE_WATERMARKS;
    return c;
}

static void test_machine_config_errors(void) {
    za_node_region r[2] = {{0, 16u << 20, 64u << 20}, {1, 4ull << 30, 64u << 20}};
    uint32_t d[4] = {10, 20, 20, 10}, cpu_node[4] = {0, 0, 1, 1};
    za_machine *m = NULL;
    za_machine_config c = machine_config(r, d, cpu_node);
    EXPECT(za_machine_create(NULL, &m), ZA_ERR_NULL);
    EXPECT(za_machine_create(&c, NULL), ZA_ERR_NULL);
    za_machine_config bad = c;
    bad.regions = NULL;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_NULL);
    bad = c;
    bad.flags = 0x80;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_INVALID_ARGUMENT);
    bad = c;
    bad.nodes = 65;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_INVALID_ARGUMENT);
    bad = c;
    bad.nodes = 0;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_CONFIG);
    uint32_t bad_d[4] = {10, 20, 20, 11}; /* slit_valid: 10 on the diagonal */
    bad = c;
    bad.distances = bad_d;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_CONFIG);
    uint32_t wide_d[4] = {10, 256, 256, 10}; /* numa_set_distance: a byte */
    bad.distances = wide_d;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_CONFIG);
    uint32_t far_cpu[4] = {0, 0, 1, 2}; /* a CPU on a node the table lacks */
    bad = c;
    bad.cpu_node = far_cpu;
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_CONFIG);
    za_node_region one[2] = {{0, 16u << 20, 64u << 20}, {0, 4ull << 30, 64u << 20}};
    bad = c;
    bad.regions = one; /* node 1 without memory */
    EXPECT(za_machine_create(&bad, &m), ZA_ERR_CONFIG);
    CHECK(m == NULL); /* untouched on error */
}

static void test_machine(void) {
    za_node_region r[2] = {{0, 16u << 20, 64u << 20}, {1, 4ull << 30, 64u << 20}};
    uint32_t d[4] = {10, 20, 20, 10}, cpu_node[4] = {0, 0, 1, 1};
    za_machine_config c = machine_config(r, d, cpu_node);
    za_machine *m = NULL;
    EXPECT(za_machine_create(&c, &m), ZA_OK);
    if (m == NULL) return;
    uint32_t node = 9;
    EXPECT(za_machine_cpu_node(m, 2, &node), ZA_OK);
    CHECK(node == 1);
    EXPECT(za_machine_cpu_node(m, 4, &node), ZA_ERR_INVALID_ARGUMENT);

    /* MPOL_LOCAL on CPU 2: node 1, a hit and a local allocation there. */
    uint64_t pfn = 0, far = 0, bound = 0;
    EXPECT(za_machine_alloc(m, 2, ZA_NODE_LOCAL, 0, 0, 0, 1, &pfn, &node), ZA_OK);
    CHECK(node == 1 && pfn >= (4ull << 30) / 4096);
    EXPECT(za_machine_node_of(m, pfn, &node), ZA_OK);
    CHECK(node == 1);
    /* CPU 0 prefers node 1: a hit on node 1 by another node's CPU (other_node). */
    EXPECT(za_machine_alloc(m, 0, 1, 0, ZA_ALLOC_THISNODE, 0, 1, &far, &node), ZA_OK);
    CHECK(node == 1);
    /* CPU 0, local policy, bound to node 1 (MPOL_BIND): its zonelist, node 0 left out; the
     * preferred zone is the first the mask allows (first_zones_zonelist), so a hit too. */
    EXPECT(za_machine_alloc(m, 0, ZA_NODE_LOCAL, 1u << 1, 0, 3, 1, &bound, &node), ZA_OK);
    CHECK(node == 1 && bound % 8 == 0);
    za_numastat s0, s1;
    EXPECT(za_machine_numastat(m, 0, &s0), ZA_OK);
    EXPECT(za_machine_numastat(m, 1, &s1), ZA_OK);
    CHECK(s1.numa_hit == 3 && s1.local_node == 1 && s1.other_node == 2);
    CHECK(s1.numa_miss == 0 && s0.numa_foreign == 0 && s0.numa_hit == 0);
    EXPECT(za_machine_numastat(m, 2, &s0), ZA_ERR_INVALID_ARGUMENT);

    /* Bad requests: their codes, nothing counted. */
    uint64_t none = 0;
    EXPECT(za_machine_alloc(m, 4, ZA_NODE_LOCAL, 0, 0, 0, 1, &none, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_alloc(m, 0, 2, 0, 0, 0, 1, &none, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_alloc(m, 0, -2, 0, 0, 0, 1, &none, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_alloc(m, 0, 0, 1u << 5, 0, 0, 1, &none, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_alloc(m, 0, 0, 0, 4, 0, 1, &none, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_alloc(m, 0, 0, 0, 0, 40, 1, &none, NULL), ZA_ERR_ORDER_TOO_LARGE);
    EXPECT(za_machine_alloc(m, 0, 0, 0, 0, 0, 7, &none, NULL), ZA_ERR_INVALID_MIGRATETYPE);
    EXPECT(za_machine_alloc(m, 0, 0, 0, 0, 0, 1, NULL, NULL), ZA_ERR_NULL);
    CHECK(none == 0);
    za_numastat again;
    EXPECT(za_machine_numastat(m, 1, &again), ZA_OK);
    CHECK(memcmp(&again, &s1, sizeof again) == 0);

    /* CPU 0 frees node 1's page: it waits on CPU 0's pageset of node 1's zone until CPU 0's
     * vmstat worker expires it (three runs). */
    za_stats n1;
    EXPECT(za_machine_free(m, 0, far, 0), ZA_OK);
    EXPECT(za_machine_node_stats(m, 1, &n1), ZA_OK);
    CHECK(n1.pcp_pages > 0);
    uint32_t changes = 0, total = 0;
    for (int i = 0; i < 3; i++) {
        EXPECT(za_machine_vmstat_tick(m, 0, &changes), ZA_OK);
        total += changes;
    }
    CHECK(total > 0);
    EXPECT(za_machine_vmstat_tick(m, 4, NULL), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_free(m, 0, far, 0), ZA_ERR_DOUBLE_FREE);
    EXPECT(za_machine_free(m, 0, 1, 0), ZA_ERR_OUT_OF_ZONE);
    EXPECT(za_machine_free(m, 9, pfn, 0), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_node_of(m, 1, &node), ZA_ERR_OUT_OF_ZONE);
    EXPECT(za_machine_free(m, 2, pfn, 0), ZA_OK);
    EXPECT(za_machine_free(m, 1, bound, 3), ZA_OK);

    char buf[1024];
    size_t needed = 0;
    EXPECT(za_machine_text(m, 1, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strncmp(buf, "numa_hit 3\nnuma_miss 0\n", 23) == 0 && strlen(buf) + 1 == needed);
    EXPECT(za_machine_text(m, -1, buf, sizeof buf, &needed), ZA_OK);
    CHECK(strstr(buf, "Node 0, zone    DMA32") != NULL);
    CHECK(strstr(buf, "Node 1, zone   Normal") != NULL);
    EXPECT(za_machine_text(m, 2, buf, sizeof buf, &needed), ZA_ERR_INVALID_ARGUMENT);
    EXPECT(za_machine_text(m, -1, buf, 4, &needed), ZA_ERR_BUFFER_TOO_SMALL);

    EXPECT(za_machine_drain(m), ZA_OK);
    EXPECT(za_machine_check(m), ZA_OK);
    for (uint32_t n = 0; n < 2; n++) {
        za_stats st;
        EXPECT(za_machine_node_stats(m, n, &st), ZA_OK);
        CHECK(st.managed_pages > 0 && st.free_pages == st.managed_pages && st.pcp_pages == 0);
    }
    /* A handle of another type is refused, and so is a destroyed one while mapped. */
    za_zone_config zc;
    za_zone *z = NULL;
    EXPECT(za_zone_config_default(&zc), ZA_OK);
    EXPECT(za_zone_create(&zc, &z), ZA_OK);
    EXPECT(za_machine_check((const za_machine *)z), ZA_ERR_BAD_HANDLE);
    EXPECT(za_zone_destroy(z), ZA_OK);
    EXPECT(za_machine_destroy(m), ZA_OK);
    EXPECT(za_machine_destroy(NULL), ZA_ERR_NULL);
}

int main(void) {
    test_strerror();
    test_last_panic_message();
    test_zone_config_errors();
    test_zone();
    test_arena();
    test_machine_config_errors();
    test_machine();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures;
}
