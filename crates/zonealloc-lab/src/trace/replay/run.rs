//! Running a replay over a trace: one streaming pass, every variant's [`Replayer`] and the
//! kernel's own counts ([`KernelSide`]) fed from one parse, into a [`ReplayRun`].

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::kernel::{self, KernelSide};
use super::prefix::PrefixLook;
use super::preset::Kernel;
use super::{
    first_events, input, pcp_state, proc_setup, start_count, Geometry, Online, Replayer,
    FRAG_ORDERS,
};
use crate::procfs::ProcSnapshot;
use crate::trace::migratetype::Numbering;
use crate::trace::parse::Parser;
use crate::trace::variant::Variant;

/// What `zonealloc trace replay` was asked to do.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The policy specs, in report order (the first is the baseline of the comparisons);
    /// parsed on top of the `--kernel` preset.
    pub variants: Vec<String>,
    /// The kernel family whose rules the replay runs (default: mainline, or inferred).
    pub kernel: Option<Kernel>,
    /// First frame of the zone (default 0).
    pub zone_start: Option<u64>,
    /// Zone size in frames (default: [`super::DEFAULT_ZONE_PAGES`], onlined as the
    /// trace touches it).
    pub zone_pages: Option<u64>,
    /// Which frames are free at the start (default: all with `--zone-pages`, else touched).
    pub online: Option<Online>,
    /// CPUs (default: from the trace's header or first events).
    pub cpus: Option<u32>,
    /// Per-CPU lists off in every variant.
    pub no_pcp: bool,
    /// Migratetype numbering (default: inferred from the trace's first events).
    pub numbering: Option<Numbering>,
    /// Fragmentation samples over the trace (taken every `sample_every` events).
    pub samples: u64,
    /// Write each variant's run in ftrace format here.
    pub emit: Option<PathBuf>,
    /// Fail if any line is malformed.
    pub strict: bool,
    /// Replay what the trace shows without a cause ([`kernel`]): drains and untraced
    /// allocations (default: with `--proc`).
    pub infer: Option<bool>,
    /// Start each CPU's lists from the count the trace pins at its start
    /// ([`start_count`]; default: off, `Some(true)` turns it on).
    pub infer_start_count: Option<bool>,
    /// Infer which lists each CPU's count is on from the window's first
    /// [`first_events::LIST_EVENTS`] events ([`pcp_state`]; default: as `infer`).
    pub infer_lists: Option<bool>,
    /// No once-a-second `decay_pcp_high` even where the kernel family has it.
    pub no_decay: bool,
    /// Set the zones up from this `/proc` snapshot folder.
    pub proc: Option<PathBuf>,
    /// Compare the end state with this `/proc` snapshot folder.
    pub proc_after: Option<PathBuf>,
    /// The part of the trace to replay (with `--proc` and no markers given: between
    /// `KT_SNAPSHOT_BEFORE_END` and `KT_SNAPSHOT_AFTER_BEGIN`, where the trace has them).
    pub window: input::Window,
}

/// A finished replay.
pub struct ReplayRun {
    /// The kernel's side: its refills, drains, fallbacks per zone and CPU.
    pub kernel: KernelSide,
    /// The kernel family the variants started from, and whether it was given.
    pub preset: (Kernel, bool),
    /// The zones' shape.
    pub geo: Geometry,
    /// One per variant, in order.
    pub replayers: Vec<Replayer>,
    /// Lines and events of the pass.
    pub parser: Parser,
    /// Seconds of the pass (reading, parsing, the set-up it overlaps, and replaying).
    pub replay_s: f64,
    /// The files written by `--emit`.
    pub emitted: Vec<PathBuf>,
    /// The window replayed, and whether its start marker was found.
    pub window: (input::Window, Option<bool>),
    /// Per variant, per zone: the end state against `--proc-after`.
    pub end_states: Vec<Vec<proc_setup::EndState>>,
    /// Whether causes were inferred ([`kernel`]).
    pub infer: bool,
    /// Whether the zones come from `--proc`.
    pub setup_from_proc: bool,
    /// Each CPU's count at the start marker, inferred from the trace ([`start_count`]);
    /// `None` when that inference is off.
    pub start_counts: Option<start_count::StartCounts>,
    /// The kernel's unusable free space index of the highest zone (thousandths, per
    /// [`FRAG_ORDERS`]) at `--proc` (the trace's start) and `--proc-after` (its end).
    pub kernel_frag: (Option<[u32; 3]>, Option<[u32; 3]>),
}

/// The unusable free space index of a snapshot's zone, per [`FRAG_ORDERS`].
fn kernel_unusable(snap: &ProcSnapshot, zone: zonealloc::ZoneType) -> Option<[u32; 3]> {
    let z = snap.zone(0, zone)?;
    let blocks = z.free_blocks()?;
    let mut nr_free = [0u64; zonealloc::MAX_ORDER_LIMIT as usize + 1];
    for (o, n) in blocks.iter().enumerate().take(nr_free.len()) {
        nr_free[o] = *n;
    }
    let s = zonealloc::FreeAreaSnapshot {
        node: 0,
        zone_name: zone.name(),
        max_order: (blocks.len().max(1) - 1) as u8,
        pageblock_order: snap.pageblock_order.unwrap_or(9),
        nr_free,
        free_by_type: Default::default(),
        pageblocks_by_type: Default::default(),
    };
    Some(FRAG_ORDERS.map(|o| zonealloc::stats::unusable_free_index(&s, o.min(s.max_order))))
}

/// Where variant `i` of `n` writes its trace: `path` itself for one variant, else
/// `path` with `.<variant>` before the extension.
pub fn emit_path(path: &Path, name: &str, n: usize) -> PathBuf {
    if n == 1 {
        return path.to_owned();
    }
    let slug = crate::report::file_slug(name);
    let stem = path
        .file_stem()
        .map_or_else(Default::default, |s| s.to_string_lossy());
    let file = match path.extension() {
        Some(ext) => format!("{stem}.{slug}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{slug}"),
    };
    path.with_file_name(file)
}

/// Events between fragmentation samples when the trace's length is not known in advance:
/// samples come every event at first, then the interval doubles (and every
/// other sample is dropped) whenever `2 * samples` have been taken, so a trace of any length
/// ends with between `samples` and `2 * samples` evenly spaced samples.
const FIRST_SAMPLE_INTERVAL: u64 = 1;
const _: () = assert!(FIRST_SAMPLE_INTERVAL.is_power_of_two());

/// Replays `path` (`-`: standard input) under every variant of `opts` in one pass,
/// reporting the events done so far; every zone passes its [`zonealloc::Zone::check`] at the
/// end ([`ReplayRun::check`]).
pub fn run(path: &Path, opts: &ReplayOptions, progress: &dyn Fn(u64)) -> Result<ReplayRun, String> {
    let run = run_unchecked(path, opts, progress)?;
    run.check()?;
    Ok(run)
}

impl ReplayRun {
    /// Every variant's zones pass their [`zonealloc::Zone::check`].
    pub fn check(&self) -> Result<(), String> {
        check_zones(&self.zones())
    }

    /// Every variant's zones, with the variant's name (shareable with another thread, which
    /// the replayers' `--emit` writers are not).
    pub fn zones(&self) -> Vec<(&str, &zonealloc::Zone)> {
        self.replayers
            .iter()
            .flat_map(|r| r.zones.iter().map(|z| (r.variant.name.as_str(), z)))
            .collect()
    }
}

/// Each zone passes its [`zonealloc::Zone::check`] ([`ReplayRun::zones`]).
pub fn check_zones(zones: &[(&str, &zonealloc::Zone)]) -> Result<(), String> {
    for (name, z) in zones {
        z.check()
            .map_err(|e| format!("variant '{name}': zone check failed: {e}"))?;
    }
    Ok(())
}

/// [`run`] without the zones' check at the end, for a caller that runs it beside other work
/// ([`ReplayRun::check`]; the report is built meanwhile, on a machine whose second core the
/// parse no longer needs).
pub fn run_unchecked(
    path: &Path,
    opts: &ReplayOptions,
    progress: &dyn Fn(u64),
) -> Result<ReplayRun, String> {
    let read_err = |e: io::Error| format!("reading {}: {e}", path.display());
    let snap = match &opts.proc {
        Some(dir) => Some(ProcSnapshot::read_dir(dir).map_err(|e| format!("--proc: {e}"))?),
        None => None,
    };
    let after = match &opts.proc_after {
        Some(dir) => Some(ProcSnapshot::read_dir(dir).map_err(|e| format!("--proc-after: {e}"))?),
        None => None,
    };
    let mut window = opts.window.clone();
    if snap.is_some() && window.from.is_none() && window.to.is_none() {
        window.from = Some("KT_SNAPSHOT_BEFORE_END".to_owned());
        window.to = Some("KT_SNAPSHOT_AFTER_BEGIN".to_owned());
    }
    let (input, found) = input::open_window(path, &window).map_err(read_err)?;
    let t1 = Instant::now();
    // Parsing runs on a thread of its own (`replay::pipe`), the replay here; it starts now,
    // so the zones are built while it parses. The prefix's CPU count and numbering evidence
    // come from its first events (`replay::prefix`).
    let (mut look, ahead) = PrefixLook::spawn(Parser::new(), input).map_err(read_err)?;
    // The events' numbering is read only by the replay and the `--proc` inferences: without
    // `--proc`, and with the CPU count known from a flag or the header, the zones are built
    // before the parse has shown the prefix.
    let cpus_known = opts.cpus.is_some() || look.so_far().header_cpus.is_some();
    if snap.is_some() || !cpus_known {
        look.finish(&ahead);
    }
    let numbering = |look: &PrefixLook| {
        opts.numbering
            .unwrap_or_else(|| look.so_far().evidence.verdict())
    };
    let mut geo = match &snap {
        Some(s) => proc_setup::geometry(s, opts.cpus, numbering(&look))?,
        None => Geometry::from_flags(
            opts.zone_start,
            opts.zone_pages,
            opts.online,
            opts.cpus,
            look.so_far(),
            numbering(&look),
        )?,
    };
    let preset = match (opts.kernel, &snap) {
        (Some(k), _) => (k, true),
        (None, Some(s)) => (proc_setup::kernel_of(s), false),
        (None, None) => (Kernel::V7_2, false),
    };
    // Without --kernel or --proc, the defaults (the mainline rules, and the zone a `trace gen`
    // or `lab` run records, so our own traces replay to themselves); the 7.2 preset also sets
    // the Debian kernels' boot-time choices (THP's min_free_kbytes).
    let mut base = zonealloc::ZoneConfig::default();
    if opts.kernel.is_some() || snap.is_some() {
        preset.0.apply(&mut base);
    }
    // Which lists each CPU's count is on (pcp_state) and each CPU's count at the start marker
    // (start_count), from the window's first events: the parse's own, held for the replay
    // (first_events), so a pipe gets what a file gets.
    // The start counts are off unless asked for: closer to the kernel's counts, they bring
    // the replay's refills and drains closer on 6.1 p2 only (BENCHMARKS.md, `trace replay`).
    let lists = snap.is_some() && opts.infer_lists.or(opts.infer).unwrap_or(true);
    let counts = snap.is_some() && opts.infer_start_count == Some(true);
    let first = match &snap {
        Some(s) if counts || lists => {
            let which = first_events::Which {
                counts,
                lists,
                fixed_high: preset.0.fixed_high(),
                scale_max: base.pcp.batch_scale_max,
                thp_order: base.pcp.thp_order,
                pageblock_order: base.pageblock_order,
            };
            let taken = look.take_held();
            first_events::take(&ahead, taken, &geo, s, which, first_events::LIST_EVENTS)
        }
        _ => first_events::FirstEvents::default(),
    };
    let mut head = first.lists.unwrap_or_default();
    let start_counts = first.counts;
    if let Some(sc) = &start_counts {
        for (z, span) in geo.zones.iter().enumerate() {
            if head.zones.len() <= z {
                head.zones.resize(z + 1, pcp_state::ListDemand::default());
            }
            head.zones[z].start_count = (0..geo.cpus)
                .map(|c| sc.count(span.zone_type.name(), c))
                .collect();
        }
    }
    let n = opts.variants.len();
    let mut emitted = Vec::new();
    let mut replayers = Vec::with_capacity(n);
    for spec in &opts.variants {
        let mut v = Variant::parse_on(spec, &base)?;
        if opts.no_pcp {
            v.cfg.pcp.enabled = false;
        }
        // Per zone: the snapshot's sizes on the preset, then the variant's knobs.
        let mut cfgs = Vec::with_capacity(geo.zones.len());
        for z in &geo.zones {
            let zbase = match snap.as_ref().and_then(|s| s.zone(0, z.zone_type)) {
                Some(kz) => proc_setup::zone_config(&base, kz, preset.0),
                None => base,
            };
            let mut c = Variant::parse_on(spec, &zbase)?.cfg;
            if opts.no_pcp {
                c.pcp.enabled = false;
            }
            cfgs.push(c);
        }
        let out: Option<Box<dyn Write>> = match &opts.emit {
            Some(p) => {
                let p = emit_path(p, &v.name, n);
                let f = File::create(&p).map_err(|e| format!("--emit {}: {e}", p.display()))?;
                emitted.push(p);
                Some(Box::new(BufWriter::with_capacity(1 << 16, f)))
            }
            None => None,
        };
        let mut r = Replayer::with_zones(v, &geo, out, &cfgs, snap.as_ref(), &head.zones)?;
        r.decay = cfgs.first().is_some_and(|c| c.pcp.decay && c.pcp.enabled) && !opts.no_decay;
        replayers.push(r);
    }
    let mut kernel = KernelSide::for_geometry(&geo);
    kernel.block_types = kernel::BlockTypes::new(base.pageblock_order);
    for &(pfn, mt) in &head.first_named {
        kernel.block_types.name(pfn, mt);
    }
    // The inferences read a kernel's trace, where untraced work leaves its marks; a trace we
    // wrote ourselves is a closed world (its slow-path drains are our own).
    let infer = opts.infer.unwrap_or(snap.is_some());
    for r in replayers.iter_mut() {
        // A kernel's batched frees reach the lists at their commits.
        r.commit_at_batched = infer;
    }

    // The prefix's whole look, if the zones came first; the geometry's CPU count did not
    // depend on it. Without the inferences the kernel side only counts, whatever the
    // numbering: it counts the prefix's events as the look takes them, while the parse goes
    // on (the first `counted` events of the replay below).
    let mut counted = 0u64;
    look.finish_with(&ahead, |ev| {
        if !infer {
            kernel.add_counts(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0));
            counted += 1;
        }
    });
    geo.numbering = numbering(&look);
    for r in replayers.iter_mut() {
        r.set_numbering(geo.numbering);
    }
    let mut failure: Option<io::Error> = None;
    let mut done = 0u64;
    let mut last_ts = None;
    let samples = opts.samples.max(1);
    let mut interval = FIRST_SAMPLE_INTERVAL;
    // The held events first, then the rest of the parse.
    let mut held = look.take_held().into_iter().chain(first.held);
    'replay: while let Some(chunk) = held.next().or_else(|| ahead.next()) {
        for ev in chunk.events() {
            let ev = &ev;
            // Without the inferences the kernel side only counts (the same figures).
            let inferred = if infer {
                kernel.add(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0))
            } else {
                if done >= counted {
                    kernel.add_counts(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0));
                }
                kernel::Inferred::None
            };
            let untraced: &[_] = if infer { &kernel.untraced_now } else { &[] };
            for r in replayers.iter_mut() {
                if !untraced.is_empty() {
                    if let Err(e) = r.untraced_allocs(ev, untraced) {
                        failure = Some(e);
                        break 'replay;
                    }
                }
                if let Err(e) = r.feed(ev, inferred) {
                    failure = Some(e);
                    break 'replay;
                }
            }
            done += 1;
            last_ts = ev.ts_ns.or(last_ts);
            // `interval` is a power of two: a mask, not a division per event.
            if done & (interval - 1) == 0 {
                // Samples at multiples of `interval`; at 2 * samples, keep the even ones and
                // double the interval.
                let thin = replayers
                    .first()
                    .is_some_and(|r| r.samples_kept() as u64 + 1 >= 2 * samples);
                for r in replayers.iter_mut() {
                    r.sample(done, last_ts);
                    if thin {
                        r.thin_samples();
                    }
                }
                if thin {
                    interval *= 2;
                }
            }
            if done.is_multiple_of(65_536) {
                progress(done);
            }
        }
        ahead.recycle(chunk);
    }
    // The parser reads to the end even after a failure here: a read error comes first.
    let (parser, read) = ahead.finish();
    read.map_err(read_err)?;
    if let Some(e) = failure {
        return Err(e.to_string());
    }
    if opts.strict && parser.malformed > 0 {
        return Err(format!(
            "{}: {}",
            path.display(),
            parser.malformed_summary()
        ));
    }
    for r in replayers.iter_mut() {
        if !done.is_multiple_of(interval) || done == 0 {
            r.sample(done, last_ts);
        }
        r.finish().map_err(|e| format!("--emit: {e}"))?;
    }
    progress(done);
    let end_states = match &after {
        Some(a) => replayers
            .iter()
            .map(|r| {
                geo.zones
                    .iter()
                    .zip(&r.zones)
                    .filter_map(|(span, zone)| {
                        a.zone(0, span.zone_type)
                            .map(|kz| proc_setup::end_state(zone, a, kz))
                    })
                    .collect()
            })
            .collect(),
        None => Vec::new(),
    };
    let kernel_frag = match geo.zones.last() {
        Some(z) => (
            snap.as_ref().and_then(|s| kernel_unusable(s, z.zone_type)),
            after.as_ref().and_then(|s| kernel_unusable(s, z.zone_type)),
        ),
        None => (None, None),
    };
    Ok(ReplayRun {
        kernel,
        preset,
        geo,
        replayers,
        parser,
        replay_s: t1.elapsed().as_secs_f64(),
        emitted,
        window: (window, found),
        end_states,
        infer,
        setup_from_proc: snap.is_some(),
        start_counts,
        kernel_frag,
    })
}
