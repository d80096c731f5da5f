//! Seed 004 (remote drain): the throughput statement and Minchan Kim's drain_all_pages trace.

use super::{base, not_modelled};
use crate::report::verdict::{Claim, ClaimKind, Criterion, Expect, NoiseFloor};

const EXP: &str = "drain";

/// The claims of seed 004.
pub(super) fn claims() -> Vec<Claim> {
    vec![
        Claim {
            item: "004 Minchan Kim's trace: avg(dur)",
            source: "Minchan Kim's drain_all_pages trace: avg(dur), and \"your patch perfectly removed those wasted time\"",
            quote: "max(dur) 166713013 avg(dur) 487511.77786438033 count(dur) 1283 ... Your patch perfectly removed those wasted time.",
            claim: "draining remotely does not wait for busy owners, so drain_all is much faster on average",
            seed_figure: "avg 487.5 µs over 1283 drains with owner drain (before); removed after",
            criterion: Criterion::Direction {
                metric: "drain avg",
                against: "owner drain",
                variant: "remote drain",
                expect: Expect::Decrease,
                min_ratio: 2.0,
            },
            ..base("004", EXP)
        },
        Claim {
            item: "004 Minchan Kim's trace: max(dur)",
            source: "Minchan Kim's drain_all_pages trace: max(dur)",
            quote: "worst case was 166ms and avg was 487us",
            claim: "the worst drain no longer waits on the slowest owner",
            seed_figure: "max 166.7 ms with owner drain (before); removed after",
            caveat: Some(
                "remote drain's own tail, its p99 without run-queue wait, is in the drain \
                 table beside owner drain's wall-time p99; the simulated worst drain (the next \
                 claim) decides it without a clock",
            ),
            // The p99 of 100 drains is the second longest: once two drains in a hundred
            // waited for a CPU, it is the scheduler's wait, not ours.
            noise_floor: Some(NoiseFloor {
                metric: "drains with run-queue wait",
                variant: "remote drain",
                at_least: 1.0,
                why: "remote drain's p99 is the machine's run-queue wait: at least 1% of its \
                      drains waited for a CPU",
            }),
            criterion: Criterion::Direction {
                metric: "drain p99",
                against: "owner drain",
                variant: "remote drain",
                expect: Expect::Decrease,
                min_ratio: 2.0,
            },
            ..base("004", EXP)
        },
        Claim {
            item: "004 Minchan Kim's trace: max(dur)",
            source: "Minchan Kim's drain_all_pages trace: max(dur)",
            quote: "worst case was 166ms and avg was 487us",
            claim: "the worst drain no longer waits on the slowest owner (on a clock that counts work, not time)",
            seed_figure: "max 166.7 ms with owner drain (before); removed after",
            deterministic: true,
            proxy: Some("the longest of a run's 100 drains on a simulated clock: the workers' requests (the timed run's sizes and seeds) laid out in steps, a step being one allocator call or one page of processing; owner drain waits for each owner's next allocator call, remote drain takes one step per CPU. The wall-clock p99 beside it is the machine's"),
            criterion: Criterion::Direction {
                metric: "simulated worst drain",
                against: "owner drain",
                variant: "remote drain",
                expect: Expect::Decrease,
                min_ratio: 2.0,
            },
            ..base("004", EXP)
        },
        Claim {
            item: "004 Minchan Kim's trace: max(dur)",
            source: "Minchan Kim's drain_all_pages trace: max(dur)",
            quote: "be stuck on drain_all_pages until work on workqueue run",
            kind: ClaimKind::Mechanism,
            claim: "a remote drain asks no owner for anything, so it cannot wait on the slowest one",
            seed_figure: "max 166.7 ms with owner drain (before); removed after",
            deterministic: true,
            proxy: Some("owner handshakes one drain_all needs with every owner busy: each is a wait for that owner's next allocator call; a count, not a clock: the worst drain's length is the wall-clock claim above"),
            criterion: Criterion::Direction {
                metric: "owner handshakes per drain",
                against: "owner drain",
                variant: "remote drain",
                expect: Expect::Decrease,
                min_ratio: 2.0,
            },
            ..base("004", EXP)
        },
        Claim {
            item: "004 netperf and hackbench with ~100 drains/s",
            source: "netperf and hackbench run beside __drain_all_pages ~100 times per second",
            quote: "The new scheme performs a bit better (~5%), although the important point here is there are no performance regressions vs. the previous mechanism.",
            claim: "the workers' own throughput does not regress (a bit better)",
            seed_figure: "~5% better",
            criterion: Criterion::Within {
                metric: "ops/s",
                against: "owner drain",
                variant: "remote drain",
                lo: 0.0,
                hi: 0.05,
            },
            ..base("004", EXP)
        },
        not_modelled(
            "004",
            EXP,
            "004 alloc_contig_range in CMA",
            "Minchan Kim's report, second paragraph",
            "The PCP draining takes several hundred millisecond sometimes though there is no memory pressure",
            "the model has no CMA and no alloc_contig_range; the drain it waits on is the same \
             drain_all the claims above judge",
        ),
    ]
}
