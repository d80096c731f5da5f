//! Seed 000 (free_high): the reuse table, the spread and the zone-lock trade-off, and both
//! netperf-tcp tables.

use super::{base, not_modelled, MAINLINE_RULE, REVERT_HIGHPCP, SEED_RULE};
use crate::report::verdict::{Claim, ClaimKind, Criterion, Expect};

const EXP: &str = "free-high";

/// Why the small-cache machine's results are not judged.
const SMALL_CACHE: &str = "the lab has this machine's cache only; the seed's small-cache \
    results (revert +0.27..+4.16%, series +0.50..+6.63%, misses higher with the series than \
    with the revert) need a simulated small last-level cache, cachegrind over the netperf-like \
    workload touching its messages, which is not built yet";

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
        not_modelled(
            "000",
            EXP,
            "000 netperf-tcp, 1-socket skylake with a small CPU cache",
            "netperf-tcp, small-cache machine, vanilla vs mm-reverthighpcp-v1 and mm-highpcplimit-v2",
            "On a 1-socket skylake machine with a small CPU cache that suffers more if cache misses are too high",
            SMALL_CACHE,
        ),
        not_modelled(
            "000",
            EXP,
            "000 \"not fully restored as cache misses are still higher\"",
            "text under the small-cache table",
            "performance is almost restored with the series applied. It's not fully restored as cache misses are still higher.",
            SMALL_CACHE,
        ),
    ]
}
