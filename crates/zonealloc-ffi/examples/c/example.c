/* libzonealloc from C: an arena of real pages, and a zone of frame numbers.
 *
 * Built and run by `cargo test -p zonealloc-ffi --test c`; by hand:
 *   cargo build -p zonealloc-ffi
 *   cc -Icrates/zonealloc-ffi/include crates/zonealloc-ffi/examples/c/example.c \
 *      target/debug/libzonealloc_ffi.a -lpthread -ldl -lm -lrt -lutil -lgcc_s -o example
 */
#include <stdio.h>
#include <string.h>

#include "zonealloc.h"

#define TRY(call)                                                                    \
    do {                                                                             \
        za_status s_ = (call);                                                       \
        if (s_ != ZA_OK) {                                                           \
            fprintf(stderr, "%s: %s\n", #call, za_strerror((int32_t)s_));            \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(void) {
    /* An arena of 16 MiB (4096 pages of 4 KiB), freed blocks poisoned. */
    za_arena_config ac;
    za_arena *arena;
    TRY(za_arena_config_default(&ac));
    ac.flags = ZA_ARENA_POISON;
    TRY(za_arena_create(&ac, &arena));

    void *blocks[8];
    for (unsigned i = 0; i < 8; i++) {
        TRY(za_arena_alloc(arena, i % 4, /* movable */ 1, &blocks[i]));
        memset(blocks[i], (int)i, 4096u << (i % 4));
    }
    printf("8 blocks of orders 0..3, the first at %p\n", blocks[0]);

    /* A mistake is an error code, not a crash: */
    za_status s = za_arena_free(arena, (char *)blocks[3] + 4096, 0);
    printf("freeing the second page of an order-3 block: %s\n", za_strerror((int32_t)s));

    for (unsigned i = 0; i < 8; i++) TRY(za_arena_free(arena, blocks[i], i % 4));
    s = za_arena_free(arena, blocks[0], 0);
    printf("freeing it again: %s\n", za_strerror((int32_t)s));

    char text[4096];
    size_t needed;
    TRY(za_arena_drain(arena));
    TRY(za_arena_buddyinfo(arena, text, sizeof text, &needed));
    printf("/proc/buddyinfo of the arena:\n%s", text);
    za_stats st;
    TRY(za_arena_stats(arena, &st));
    printf("allocs %llu, frees %llu, free pages %llu of %llu\n", (unsigned long long)st.allocs,
           (unsigned long long)st.frees, (unsigned long long)st.free_pages,
           (unsigned long long)st.managed_pages);
    TRY(za_arena_check(arena));
    TRY(za_arena_destroy(arena));

    /* A zone of frame numbers only: frames 0x10000..0x20000, two CPUs' lists. */
    za_zone_config zc;
    za_zone *zone;
    TRY(za_zone_config_default(&zc));
    zc.start_pfn = 0x10000;
    zc.end_pfn = 0x20000;
    zc.cpus = 2;
    TRY(za_zone_create(&zc, &zone));
    uint64_t pfn;
    TRY(za_zone_alloc(zone, 9, /* unmovable */ 0, &pfn));
    printf("an order-9 block (2 MiB) at pfn %#llx\n", (unsigned long long)pfn);
    TRY(za_zone_free(zone, pfn, 9));
    TRY(za_zone_zoneinfo(zone, text, sizeof text, &needed));
    printf("%s", text);
    TRY(za_zone_destroy(zone));
    return 0;
}
