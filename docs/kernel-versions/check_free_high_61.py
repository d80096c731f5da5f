#!/usr/bin/env python3
"""Which free_high rule did the 6.1 kernel follow? (docs/kernel-versions.md, section 3.2)

Usage: python3 docs/kernel-versions/check_free_high_61.py [/work/shared/kernel/linux-6.1]

Replays the per-CPU event order of the 6.1 traces for the DMA32 zone (pfn >= 0x1000) and, for
every order-1..3 free that goes straight to free_unref_page_commit(), tabulates whether the next
event on that CPU is an mm_page_pcpu_drain, against two predictors of free_high:
  kernel: pcp->free_factor != 0 (6.1 free_unref_page_commit); free_factor grows by one per
          drain that was not free_high (nr_pcp_free, capped at CONFIG_PCP_BATCH_SCALE_MAX = 5)
          and halves on every PCP allocation (rmqueue_pcplist)
  ours:   free_count > 0 (FreeHigh::Original in crates/zonealloc/src/pcp/mod.rs); free_count
          grows by 1 << order per free (cap batch << 5) and halves on every PCP allocation
free_high makes nr_pcp_high() return 0, so a true free_high is always followed by a drain.
The factors' state at the start of each phase is unknown and taken as 0.
"""
import collections
import lzma
import os
import re
import sys

EV = re.compile(r"\[(\d+)\].*?\s(mm_page_\w+): page=\S+ pfn=0x([0-9a-f]+) order=(\d+)")
BATCH, SCALE = 63, 5


def pcp_order(order):
    return order <= 3 or order == 9


def replay(path):
    per_cpu = collections.defaultdict(list)
    with lzma.open(path, "rt") as f:
        for line in f:
            m = EV.search(line)
            if m:
                per_cpu[int(m.group(1))].append((m.group(2), int(m.group(3), 16),
                                                 int(m.group(4))))
    tab = {"kernel": collections.Counter(), "ours": collections.Counter()}
    for events in per_cpu.values():
        free_factor = free_count = 0
        for i, (name, pfn, order) in enumerate(events):
            if pfn < 0x1000 or not pcp_order(order):
                continue
            nxt = events[i + 1][0] if i + 1 < len(events) else None
            if name == "mm_page_alloc":
                free_factor >>= 1
                free_count >>= 1
                continue
            if name not in ("mm_page_free", "mm_page_free_batched"):
                continue
            if name == "mm_page_free" and nxt == "mm_page_free_batched":
                continue  # free_unref_page_list: the commit follows the batched event
            drained = nxt == "mm_page_pcpu_drain"
            high_order = name == "mm_page_free" and 1 <= order <= 3
            free_high = high_order and free_factor != 0
            if high_order:
                outcome = "drain" if drained else "no drain"
                tab["kernel"][("free_factor != 0" if free_factor else "free_factor == 0",
                               outcome)] += 1
                tab["ours"][("free_count > 0" if free_count else "free_count == 0",
                             outcome)] += 1
            if drained and not free_high and free_factor < SCALE:
                free_factor += 1
            if free_count < BATCH << SCALE:
                free_count += 1 << order
    return tab


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/kernel/linux-6.1"
    for phase in ("trace_p1_tmpfs.txt.xz", "trace_p2_procs_pipe.txt.xz"):
        tab = replay(os.path.join(root, phase))
        print(phase)
        for rule in ("kernel", "ours"):
            for key, n in sorted(tab[rule].items()):
                print(f"  {rule:<6} {key[0]:<17} -> {key[1]:<8} {n}")


if __name__ == "__main__":
    main()
