//! Seed 000 (free_high): the reuse table, the spread and the zone-lock trade-off, and both
//! netperf-tcp tables.

use super::{base, MAINLINE_RULE, REVERT_HIGHPCP, SEED_RULE};
use crate::report::verdict::{Claim, ClaimKind, Criterion, Expect};

const EXP: &str = "free-high";

/// What the cachegrind proxy stands for.
const CACHE_PROXY: &str = "messages per million estimated cycles of the netperf-like workload \
    over real memory under cachegrind (sender writes, receiver reads, one seed), with a fixed L1 \
    and the machine's last-level cache simulated: cycles = instructions + 10 per L1 miss + 100 \
    per LL miss (KCachegrind's estimate). The seed's own mechanism, cache misses from page \
    reuse, counted the same on every machine. Small: 512 KiB, 16-way (less than the messages \
    in flight, so a freed block is cached only if it comes back soon); large: 32 MiB, 16-way \
    (the whole arena)";
/// The claims of seed 000.
pub(super) fn claims() -> Vec<Claim> {
    vec![
        Claim {
            item: "000 reuse table (perf kmem:mm_page_alloc, 5 most used page frames)",
            source: "the 5 most used page frames, 5.17-rc3 vs 5.17-full-series",
            quote: "5.17-rc3: 13041 .. 13128 pfn=...; 5.17-full-series: 142693 .. 166950 pfn=...",
            claim: "free_high returns a freeing CPU's high-order pages to the buddy, so the allocating CPU reuses the same hot frames far more often",
            seed_figure: "top-5 allocations per frame 13,041..13,128 → 142,693..166,950: mean ×12.2",
            deterministic: true,
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Direction {
                metric: "top-5 reuse mean",
                against: "free_high=off",
                variant: SEED_RULE,
                expect: Expect::Increase,
                min_ratio: 2.0,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 reuse table (perf kmem:mm_page_alloc, 5 most used page frames)",
            source: "the 5 most used page frames, all three kernels",
            quote: "5.17-revert-highpcp: 192009 .. 402523 pfn=... (above both 5.17-rc3 and 5.17-full-series)",
            claim: "with no high-order pages on the per-CPU lists at all (the revert), reuse is the highest of the three",
            seed_figure: "top-5 means: vanilla 13,094, full series 159,571, revert 246,876",
            deterministic: true,
            criterion: Criterion::Highest {
                metric: "top-5 reuse mean",
                variant: REVERT_HIGHPCP,
                others: &["free_high=off", SEED_RULE],
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 \"The spread is wider\" (text after the reuse table)",
            source: "text after the reuse table",
            quote: "The spread is wider as there is still time before pages freed to one PCP get released",
            // Pages that wait on a PCP before release are not the ones the allocator finds
            // next: the reuse spreads over more frames than with the revert, whose frees go
            // straight back to the buddy.
            claim: "the full series spreads its reuse over more frames than the revert, as freed pages wait on the per-CPU list before release",
            seed_figure: "full series' top 5 within 142,693..166,950; revert's 192,009..402,523 (no frame count published)",
            deterministic: true,
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Direction {
                metric: "distinct frames",
                against: REVERT_HIGHPCP,
                variant: SEED_RULE,
                expect: Expect::Increase,
                min_ratio: 1.0,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 \"tradeoff between fast reuse and reduced zone lock acquisition\"",
            source: "text after the reuse table, and the closing paragraph",
            quote: "a tradeoff between fast reuse and reduced zone lock acquisition ... benefit from avoiding zone->lock for every SLUB refill/drain",
            kind: ClaimKind::Mechanism,
            claim: "the full series takes the zone lock less often than the revert, which takes it for every block",
            seed_figure: "no figure (stated)",
            deterministic: true,
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Direction {
                metric: "zone-lock/1000 blocks",
                against: REVERT_HIGHPCP,
                variant: SEED_RULE,
                expect: Expect::Decrease,
                min_ratio: 1.0,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, the machine used to gather the traces",
            source: "netperf-tcp, first machine, vanilla vs mm-highpcplimit-v2",
            quote: "On the machine used to gather the traces, the headline performance was equivalent. Hmean 64: 0.13% .. 16384: -2.04%",
            claim: "the headline throughput with the series is equivalent",
            seed_figure: "Hmean -2.04%..+1.39% over message sizes 64..16384",
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Within {
                metric: "messages/s",
                against: "free_high=off",
                variant: SEED_RULE,
                lo: -0.0204,
                hi: 0.0139,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, the machine used to gather the traces",
            source: "netperf-tcp, first machine, vanilla vs mm-reverthighpcp-v1r1",
            quote: "Hmean 64: 0.10% .. 128: 0.49% .. 16384: -7.43%",
            claim: "the revert is equivalent or slower on this machine",
            seed_figure: "Hmean -7.43%..+0.49% over message sizes 64..16384",
            criterion: Criterion::Within {
                metric: "messages/s",
                against: "free_high=off",
                variant: REVERT_HIGHPCP,
                lo: -0.0743,
                hi: 0.0049,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, the machine used to gather the traces",
            source: "netperf-tcp, first machine, vanilla vs mm-highpcplimit-v2 (simulated large cache)",
            quote: "On the machine used to gather the traces, the headline performance was equivalent. Hmean 64: 0.13% .. 16384: -2.04%",
            claim: "with a large last-level cache (simulated, 32 MiB), the series' throughput is equivalent",
            seed_figure: "Hmean -2.04%..+1.39% over message sizes 64..16384",
            deterministic: true,
            proxy: Some(CACHE_PROXY),
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Within {
                metric: "messages/M est. cycles, large LL",
                against: "free_high=off",
                variant: SEED_RULE,
                lo: -0.0204,
                hi: 0.0139,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, the machine used to gather the traces",
            source: "netperf-tcp, first machine, vanilla vs mm-reverthighpcp-v1r1 (simulated large cache)",
            quote: "Hmean 64: 0.10% .. 128: 0.49% .. 16384: -7.43%",
            claim: "with a large last-level cache (simulated, 32 MiB), the revert is equivalent or slower",
            seed_figure: "Hmean -7.43%..+0.49% over message sizes 64..16384",
            deterministic: true,
            proxy: Some(CACHE_PROXY),
            criterion: Criterion::Within {
                metric: "messages/M est. cycles, large LL",
                against: "free_high=off",
                variant: REVERT_HIGHPCP,
                lo: -0.0743,
                hi: 0.0049,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, 1-socket skylake with a small CPU cache",
            source: "netperf-tcp, small-cache machine, vanilla vs mm-reverthighpcp-v1 (simulated small cache)",
            quote: "On a 1-socket skylake machine with a small CPU cache that suffers more if cache misses are too high ... Hmean 64: 0.27% .. 16384: 4.16%",
            claim: "with a small last-level cache (simulated, 512 KiB), the revert is faster: its freed blocks come back while still cached",
            seed_figure: "Hmean +0.27%..+4.16% over message sizes 64..16384",
            deterministic: true,
            proxy: Some(CACHE_PROXY),
            criterion: Criterion::Within {
                metric: "messages/M est. cycles, small LL",
                against: "free_high=off",
                variant: REVERT_HIGHPCP,
                lo: 0.0027,
                hi: 0.0416,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 netperf-tcp, 1-socket skylake with a small CPU cache",
            source: "netperf-tcp, small-cache machine, vanilla vs mm-highpcplimit-v2 (simulated small cache)",
            quote: "Hmean 64: 0.50% .. 16384: 6.63%",
            claim: "with a small last-level cache (simulated, 512 KiB), the series is faster too",
            seed_figure: "Hmean +0.50%..+6.63% over message sizes 64..16384",
            deterministic: true,
            proxy: Some(CACHE_PROXY),
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Within {
                metric: "messages/M est. cycles, small LL",
                against: "free_high=off",
                variant: SEED_RULE,
                lo: 0.0050,
                hi: 0.0663,
            },
            ..base("000", EXP)
        },
        Claim {
            item: "000 \"not fully restored as cache misses are still higher\"",
            source: "text under the small-cache table (simulated small cache)",
            quote: "performance is almost restored with the series applied. It's not fully restored as cache misses are still higher.",
            claim: "with a small last-level cache (simulated, 512 KiB), the series still misses more than the revert",
            seed_figure: "no figure (stated)",
            deterministic: true,
            proxy: Some("last-level misses per message under cachegrind (the workload and the cache of the claims above)"),
            mainline: Some(MAINLINE_RULE),
            criterion: Criterion::Direction {
                metric: "LL misses/message, small LL",
                against: REVERT_HIGHPCP,
                variant: SEED_RULE,
                expect: Expect::Increase,
                min_ratio: 1.0,
            },
            ..base("000", EXP)
        },
    ]
}
