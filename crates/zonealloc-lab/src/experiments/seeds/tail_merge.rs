//! Seed 003 (tail placement of merging buddies): the high-order stress test's three results,
//! and the whole-system benchmarks the lab does not model.

use super::{base, not_modelled};
use crate::report::verdict::{Claim, Criterion, Expect};

const EXP: &str = "tail-merge";

/// The reason every whole-system benchmark of the seed is not modelled.
const SYSTEM: &str = "a whole-system benchmark (compiler, network stack, database, memory \
    bandwidth) on three 3 GB machines: the allocator's free-list order reaches it through \
    cache and fragmentation effects the lab's zone does not have, and the seed concludes \
    nothing from it";

/// The claims of seed 003.
pub(super) fn claims() -> Vec<Claim> {
    vec![
        Claim {
            item: "003 high-order stress: unusable free space index",
            source: "high-order stress test, closing paragraph",
            quote: "the \"unusability free space index\" which is a measure of external fragmentation was slightly lower (lower is better) throughout the lifetime of the system",
            claim: "tail placement of likely-merging buddies lowers the unusable free space index",
            seed_figure: "\"slightly lower\" (no number)",
            deterministic: true,
            criterion: Criterion::Direction {
                metric: "unusable index order-9",
                against: "tail_merge=off",
                variant: "tail_merge=on",
                expect: Expect::Decrease,
                min_ratio: 1.0,
            },
            ..base("003", EXP)
        },
        Claim {
            item: "003 high-order stress: huge pages allocated",
            source: "high-order stress test, closing paragraph",
            quote: "The absolute number of huge pages allocated are the same with or without the page",
            claim: "the number of huge pages that can be allocated is the same",
            seed_figure: "\"the same\" (no number)",
            deterministic: true,
            proxy: Some("order-9 blocks allocated at rest on a 4 GiB zone (2048 order-9 blocks, some 170 free at rest: one block is under 1% of the count), paired per seed over one occupancy cycle of the churn; the default zone's 128 blocks leave some 4 free, one block a quarter of the count"),
            caveat: Some(
                "the paired differences, a block or two of some 170, spread wider than the \
                 ±1% band on these seeds",
            ),
            // "The same": within 1%, paired per seed.
            criterion: Criterion::Within {
                metric: "order-9 successes at rest, 4 GiB zone",
                against: "tail_merge=off",
                variant: "tail_merge=on",
                lo: -0.01,
                hi: 0.01,
            },
            ..base("003", EXP)
        },
        Claim {
            item: "003 high-order stress: allocated almost immediately",
            source: "high-order stress test, closing paragraph",
            quote: "on X86 and PPC64, more huge pages were allocated almost immediately from the free lists",
            claim: "more huge-page attempts under load succeed at once from the free lists",
            seed_figure: "\"more\" (no number)",
            deterministic: true,
            criterion: Criterion::Direction {
                metric: "order-9 success under load",
                against: "tail_merge=off",
                variant: "tail_merge=on",
                expect: Expect::Increase,
                min_ratio: 1.0,
            },
            ..base("003", EXP)
        },
        Claim {
            item: "003 high-order stress: huge page latency",
            source: "high-order stress test, closing paragraph",
            quote: "I also measured the latency of how long it took to successfully allocate a huge page. The latency was slightly lower",
            claim: "a huge page allocation succeeds slightly faster",
            seed_figure: "\"slightly lower\" (no number)",
            // The clock reads back to back 20-30 ns apart, against an attempt of 60: the timer
            // resolves ±40% of it at best.
            resolution: Some(0.4),
            caveat: Some(
                "an attempt takes some 40 ns, this machine's clock resolution (back-to-back \
                 clock reads 20-30 ns): the paired ratio cannot resolve a slight change",
            ),
            criterion: Criterion::Direction {
                metric: "order-9 attempt latency p50",
                against: "tail_merge=off",
                variant: "tail_merge=on",
                expect: Expect::Decrease,
                min_ratio: 1.0,
            },
            ..base("003", EXP)
        },
        not_modelled("003", EXP, "003 KernBench (X86, X86-64, PPC64)", "KernBench tables", "Nothing notable for kernbench.", SYSTEM),
        not_modelled("003", EXP, "003 NetPerf UDP (X86, X86-64, PPC64)", "NetPerf UDP tables", "Even with some results that were not confident, the netperf UDP results were generally positive.", SYSTEM),
        not_modelled("003", EXP, "003 NetPerf TCP (X86, X86-64, PPC64)", "NetPerf TCP tables", "a solid conclusion cannot be reached", SYSTEM),
        not_modelled("003", EXP, "003 SYSBENCH (X86, X86-64, PPC64)", "SYSBENCH tables", "Again, there is little to conclude here.", SYSTEM),
        not_modelled("003", EXP, "003 STREAM", "text after SYSBENCH", "The STREAM results varied so little and are so verbose that I didn't include them here.", "the seed publishes no STREAM figure"),
    ]
}
