//! Why zonealloc's per-CPU lists do not help `mixed` (and `producer-consumer`), and which
//! knob changes that: the bench's workload on zonealloc with one `PcpConfig` knob changed
//! at a time, against the buddy-only zone.
//!
//! For each configuration: the best of 5 runs (wall and CPU ns per op), and the per-CPU
//! lists' counters (hit rate, pages moved by refills, pages drained because a list reached
//! `high`, pages drained by the `free_high` rule of seed 000), per timed op (the counters
//! also count the untimed fill of `mixed`, a few percent).
//!
//! Run: `cargo run --release -p zonealloc-lab --example pcp_knobs [mixed|producer-consumer]
//! [THREADS]` (default `mixed 1`).

use zonealloc::{FreeHigh, Pfn, Zone, ZoneConfig, ZoneType};
use zonealloc_lab::bench::peers::{PageSource, ZoneallocBuddy, ZoneallocPcp};
use zonealloc_lab::bench::workloads::Workload;

/// The bench's default pool: 256 MiB of 4 KiB frames.
const POOL_PAGES: u64 = 1 << 16;
/// Ops per thread per run.
const OPS: u64 = 500_000;
/// Runs per configuration; the best is shown.
const RUNS: u64 = 5;

fn zone(cfg: ZoneConfig) -> ZoneallocPcp {
    let (start, end) = (Pfn(POOL_PAGES), Pfn(2 * POOL_PAGES));
    let z = Zone::new(ZoneType::Normal, start, end, cfg).expect("zone config");
    z.add_free_range(start, end).expect("add frames");
    ZoneallocPcp::from_zone(z)
}

/// Best wall and CPU ns per op over [`RUNS`] runs, and the ops of all runs.
fn best<S: PageSource>(src: &S, wl: Workload, threads: usize) -> (f64, f64, f64) {
    let (mut wall, mut cpu, mut ops) = (f64::MAX, f64::MAX, 0.0);
    for seed in 0..RUNS {
        let r = wl
            .run(src, threads, OPS, POOL_PAGES, seed)
            .expect("the workload runs");
        wall = wall.min(r.wall_ns as f64 / r.ops as f64);
        cpu = cpu.min(r.cpu_ns as f64 / r.ops as f64);
        ops += r.ops as f64;
    }
    src.verify_empty().expect("everything came back");
    (wall, cpu, ops)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let wl = match args.next().as_deref() {
        None | Some("mixed") => Workload::Mixed,
        Some("producer-consumer") => Workload::ProducerConsumer,
        Some(other) => panic!("workload {other}: mixed or producer-consumer"),
    };
    let threads = wl
        .threads_used(args.next().map_or(1, |s| s.parse().expect("THREADS")))
        .expect("thread count");
    let cpus = u32::try_from(threads).expect("threads");
    let default = ZoneConfig::default().with_cpus(cpus);
    let knob = |f: &dyn Fn(&mut ZoneConfig)| {
        let mut c = default;
        f(&mut c);
        c
    };
    let configs: [(&str, ZoneConfig); 5] = [
        ("default", default),
        ("free_high Off", knob(&|c| c.pcp.free_high = FreeHigh::Off)),
        (
            "high_min 4096",
            knob(&|c| {
                c.pcp.high_min = Some(4096);
                c.pcp.high_max = Some(8192);
            }),
        ),
        ("batch_scale_max 0", knob(&|c| c.pcp.batch_scale_max = 0)),
        ("no THP list", knob(&|c| c.pcp.thp_order = None)),
    ];
    println!(
        "{} on {threads} thread(s), {POOL_PAGES} pages, best of {RUNS} runs of {OPS} ops per thread\n",
        wl.name()
    );
    println!(
        "| zonealloc config | ns/op | CPU ns/op | PCP hits | refill pages/op | drain_high pages/op | free_high pages/op |"
    );
    println!("| :--- | ---: | ---: | ---: | ---: | ---: | ---: |");
    for (name, cfg) in configs {
        let src = zone(cfg);
        let (wall, cpu, all_ops) = best(&src, wl, threads);
        let c = src.counters().expect("zonealloc has counters");
        println!(
            "| {name} | {wall:.1} | {cpu:.1} | {:.1}% | {:.2} | {:.2} | {:.2} |",
            c.pcp_hit_pct,
            c.refill_pages as f64 / all_ops,
            c.drain_high_pages as f64 / all_ops,
            c.drain_free_high_pages as f64 / all_ops,
        );
    }
    let buddy = ZoneallocBuddy::new(POOL_PAGES).expect("zone");
    let (wall, cpu, _) = best(&buddy, wl, threads);
    println!("| buddy only (`without_pcp`) | {wall:.1} | {cpu:.1} | - | - | - | - |");
}
