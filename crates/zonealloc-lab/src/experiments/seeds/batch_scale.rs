//! Seed 001 (PCP_BATCH_SCALE_MAX): the five machines' tables, column by column, and the
//! conclusion drawn from them.

use super::{base, BATCHES, CAPS, HIST_RESOLUTION};
use crate::report::verdict::{Claim, ClaimKind, Criterion};

const EXP: &str = "batch-scale";

/// The most a hold can grow from batch 63 to 2047 and still be "about linearly": twice the
/// batch's own ×32.5 (the seed's machines grew ×16.9..×29.0). A tail that grows a
/// thousandfold is the machine preempting the holder, not the hold's work.
const LINEAR_TWICE: f64 = 65.0;

/// The claims of seed 001.
pub(super) fn claims() -> Vec<Claim> {
    vec![
        Claim {
            item: "001 tables: free latency avg",
            source: "all five machines' tables, free latency avg (free_pcppages_bulk under the zone lock)",
            quote: "Sapphire Rapids 63: 2.33 .. 2047: 59.39; Ice Lake 2.21 .. 56.54; Cascade Lake 3.29 .. 86.64; Coffee Lake 3.13 .. 90.63",
            claim: "zone-lock hold time of a bulk free grows about linearly with the batch",
            seed_figure: "×25.5..×29.0 from batch 63 to 2047 on four machines",
            resolution: Some(HIST_RESOLUTION),
            // The median, not the mean: the seed's holds run with preemption off, ours are
            // preempted on a busy machine, which moves the mean but not the median.
            criterion: Criterion::Grows {
                metric: "bulk free hold p50",
                sweep: BATCHES,
                min_ratio: 25.0,
                max_ratio: LINEAR_TWICE,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: alloc latency avg",
            source: "all five machines' tables, alloc latency avg (rmqueue_bulk under the zone lock)",
            quote: "Sapphire Rapids 63: 2.67 .. 2047: 45.22; Ice Lake 2.02 .. 39.28; Cascade Lake 3.53 .. 71.14; Coffee Lake 2.48 .. 65.26",
            claim: "zone-lock hold time of a refill grows about linearly with the batch",
            seed_figure: "×16.9..×26.3 from batch 63 to 2047 on four machines",
            resolution: Some(HIST_RESOLUTION),
            criterion: Criterion::Grows {
                metric: "refill hold p50",
                sweep: BATCHES,
                min_ratio: 16.0,
                max_ratio: LINEAR_TWICE,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: free latency 99%",
            source: "all five machines' tables, free latency 99%",
            quote: "Sapphire Rapids 63: 3.57 .. 2047: 84.50; Ice Lake 3.68 .. 84.06; Cascade Lake 5.03 .. 120.34; Coffee Lake 4.40 .. 104.00",
            claim: "the tail (p99) of a bulk free's hold grows about linearly with the batch",
            seed_figure: "×22.8..×23.9 from batch 63 to 2047 on four machines",
            resolution: Some(HIST_RESOLUTION),
            tail_of: Some("bulk free hold p50"),
            criterion: Criterion::Grows {
                metric: "bulk free hold p99",
                sweep: BATCHES,
                min_ratio: 20.0,
                max_ratio: LINEAR_TWICE,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: alloc latency 99%",
            source: "all five machines' tables, alloc latency 99%",
            quote: "Sapphire Rapids 63: 6.83 .. 2047: 140.81; Ice Lake 4.35 .. 91.68; Cascade Lake 4.75 .. 106.08; Coffee Lake 3.43 .. 81.74",
            claim: "the tail (p99) of a refill's hold grows about linearly with the batch",
            seed_figure: "×20.6..×23.8 from batch 63 to 2047 on four machines",
            resolution: Some(HIST_RESOLUTION),
            tail_of: Some("refill hold p50"),
            criterion: Criterion::Grows {
                metric: "refill hold p99",
                sweep: BATCHES,
                min_ratio: 20.0,
                max_ratio: LINEAR_TWICE,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: pages per zone-lock hold",
            source: "the debug setup above the tables",
            quote: "Set PCP high to be 2 * batch ... The batch size is hard coded to be 63 (default), 127, 255, 511, 1023, 2047, 4095",
            kind: ClaimKind::Mechanism,
            claim: "each zone-lock hold moves about a batch of pages, so its work grows with the batch",
            seed_figure: "batch 63 → 2047: ×32.5 (the setup)",
            deterministic: true,
            criterion: Criterion::Grows {
                metric: "pages per zone-lock hold",
                sweep: BATCHES,
                min_ratio: 25.0,
                max_ratio: LINEAR_TWICE,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: throughput page/s",
            source: "all five machines' tables, throughput page/s, batch 63 vs 2047",
            quote: "Sapphire Rapids 513633.4 → 526793.6; Ice Lake 620210.3 → 638089.7; Cascade Lake 404706.7 → 429848.7; Coffee Lake 510542.8 → 519997.1",
            claim: "throughput barely moves with the batch",
            seed_figure: "+1.85%..+6.21% from batch 63 to 2047 on four machines",
            criterion: Criterion::Within {
                metric: "pages/s",
                against: "batch=63",
                variant: "batch=2047",
                lo: 0.0185,
                hi: 0.0621,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 tables: throughput page/s",
            source: "all five machines' tables, throughput page/s, batch 63 vs 2047",
            quote: "Sapphire Rapids 513633.4 → 526793.6 (+2.56%)",
            claim: "throughput barely moves with the batch",
            seed_figure: "+1.85%..+6.21% from batch 63 to 2047 on four machines",
            deterministic: true,
            proxy: Some("pages per 1000 instructions of one worker's alloc/free rounds under callgrind: the CPU work a page costs, which a time per page divides by the machine's speed"),
            criterion: Criterion::Within {
                metric: "pages per 1000 instructions",
                against: "batch=63",
                variant: "batch=2047",
                lo: 0.0185,
                hi: 0.0621,
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 conclusion: the max batch scale factor",
            source: "conclusion under the tables",
            quote: "to restrict the allocation/freeing latency to be less than 100 us in most times, the max batch scale factor needs to be less than or equal to 5",
            claim: "the largest scale cap (batch 63 << cap) that keeps the typical bulk-free hold under 100 µs is 5",
            seed_figure: "cap 5 (batch 2047: free latency avg 56.54..90.63 µs; 4095 would double it)",
            resolution: Some(HIST_RESOLUTION),
            // "In most times": the typical hold, the median (see the first claim).
            criterion: Criterion::LargestUnder {
                metric: "bulk free hold p50",
                sweep: CAPS,
                limit: 100_000.0,
                expected: &["cap 5"],
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 conclusion: the max batch scale factor",
            source: "conclusion under the tables, on the free latency 99% columns",
            quote: "free latency 99% at batch 2047: 84.50 (Sapphire Rapids), 84.06 (Ice Lake), 120.34 (Cascade Lake), 104.00 (Coffee Lake)",
            claim: "the largest cap whose bulk-free p99 stays under 100 µs is 4 or 5 (the seed's machines differ)",
            seed_figure: "cap 5 on two machines, cap 4 on two",
            resolution: Some(HIST_RESOLUTION),
            tail_of: Some("bulk free hold p50"),
            criterion: Criterion::LargestUnder {
                metric: "bulk free hold p99",
                sweep: CAPS,
                limit: 100_000.0,
                expected: &["cap 4", "cap 5"],
            },
            ..base("001", EXP)
        },
        Claim {
            item: "001 conclusion: the max batch scale factor",
            source: "conclusion under the tables, on the alloc latency 99% columns",
            quote: "alloc latency 99% at batch 2047: 140.81 (Sapphire Rapids), 91.68 (Ice Lake), 106.08 (Cascade Lake), 81.74 (Coffee Lake)",
            claim: "the largest cap whose refill p99 stays under 100 µs is 4 or 5 (the seed's machines differ)",
            seed_figure: "cap 5 on two machines, cap 4 on two",
            resolution: Some(HIST_RESOLUTION),
            tail_of: Some("refill hold p50"),
            criterion: Criterion::LargestUnder {
                metric: "refill hold p99",
                sweep: CAPS,
                limit: 100_000.0,
                expected: &["cap 4", "cap 5"],
            },
            ..base("001", EXP)
        },
    ]
}
