//! A replay's set-up, before its first event: the `/proc` snapshots, the window, the zones'
//! geometry, the kernel preset and base configuration, what the inferences found in the
//! window's first events, every variant's [`Replayer`] and the kernel's side. Built from the
//! [`ReplayOptions`] and the facts of the [`Source`] (its CPU count, numbering, first
//! events), in the order the parse lets it: the zones are built while it parses.

mod first;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::geometry::Geometry;
use super::infer::kernel::{self, KernelSide};
use super::infer::{free_count, free_factor, pcp_state, start_count, worker_runs};
use super::layout;
use super::options::ReplayOptions;
use super::preset::Kernel;
use super::proc_setup;
use super::replayer::Replayer;
use super::snapshots::Snapshots;
use super::vmstat::{RunsAhead, Vmstat, DEFAULT_HZ};
use super::whole_start::{self, WholeStart};
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Kept, Source};
use crate::trace::variant::Variant;

/// Everything a replay's pass needs, set up.
pub struct Setup {
    /// The snapshots.
    pub snaps: Snapshots,
    /// The kernel family the variants start from, and whether it was given.
    pub preset: (Kernel, bool),
    /// The zones' shape (its numbering the trace's, once [`Setup::new`] returns).
    pub geo: Geometry,
    /// The preset applied to the defaults: every variant's base.
    pub base: zonealloc::ZoneConfig,
    /// Whether causes are inferred ([`kernel`]).
    pub infer: bool,
    /// Each CPU's count at the start marker, inferred ([`start_count`]); `None` when off.
    pub start_counts: Option<start_count::StartCounts>,
    /// With `--whole-file` and `--proc`, the start state used ([`whole_start`]).
    pub whole_start: Option<WholeStart>,
    /// One per variant, in order.
    pub replayers: Vec<Replayer>,
    /// The files `--emit` writes.
    pub emitted: Vec<PathBuf>,
    /// The kernel's side.
    pub kernel: KernelSide,
    /// The first events of the source the kernel side has counted already (without the
    /// inferences, it counts the prefix's events as the look takes them).
    pub counted: u64,
    /// With the inferences, the first events of the window the kernel side has taken already
    /// (in the start-count walk, [`kernel::Handover`]), and what it inferred for them.
    pub noted: (u64, kernel::Notes),
}

/// The preset (`--kernel`, else the snapshot's kernel, else 7.2) and whether a flag named it.
fn preset_of(opts: &ReplayOptions, snap: Option<&ProcSnapshot>) -> (Kernel, bool) {
    match (opts.kernel, snap) {
        (Some(k), _) => (k, true),
        (None, Some(s)) => (proc_setup::kernel_of(s), false),
        (None, None) => (Kernel::V7_2, false),
    }
}

/// With `--whole-file` and `--proc`: where zoneinfo was read (when the start is wanted there)
/// and the whole file's start, from the text the stream keeps up to the before-snapshot's end.
fn whole_of(
    opts: &ReplayOptions,
    snap: Option<&ProcSnapshot>,
    source: &mut Source,
) -> Option<(Option<start_count::ReadPoint>, WholeStart)> {
    match snap.filter(|_| opts.whole_file) {
        Some(s) if whole_start::wanted(opts, snap) => Some(whole_start::find(source, s)),
        Some(_) => Some((None, WholeStart::default())),
        None => None,
    }
}

impl Setup {
    /// Sets the replay up from `opts`, `snaps` and what `source` shows, taking (and putting
    /// back) the events the look and the inferences read.
    pub fn new(
        opts: &ReplayOptions,
        snaps: Snapshots,
        source: &mut Source,
    ) -> Result<Setup, String> {
        let snap = snaps.before.as_ref();
        // The events' numbering is read only by the replay and the `--proc` inferences:
        // without `--proc`, with the CPU count known from a flag or the header and the span
        // from `--zone-pages`, the zones are built before the parse has shown the prefix.
        let cpus_known = opts.cpus.is_some() || source.so_far().header_cpus.is_some();
        // Without --proc or --zone-pages the zone's span comes from the prefix's pfns too.
        if snap.is_some() || !cpus_known || opts.zone_pages.is_none() {
            source.look();
        }
        let geo = geometry(opts, snap, source)?;
        let preset = preset_of(opts, snap);
        // Without --kernel or --proc, the defaults (the mainline rules, and the zone a `trace
        // gen` or `lab` run records, so our own traces replay to themselves); the 7.2 preset
        // also sets the Debian kernels' boot-time choices (THP's min_free_kbytes).
        let mut base = zonealloc::ZoneConfig::default();
        if opts.kernel.is_some() || snap.is_some() {
            preset.0.apply(&mut base);
        }
        let infer = opts.infer.unwrap_or(snap.is_some());
        let wants = Wants::of(opts, snap, &base, infer);
        // `--whole-file`: where zoneinfo was read, from the text the stream keeps up to the
        // before-snapshot's end, read before that text is dropped.
        let whole = whole_of(opts, snap, source);
        let roll_at = whole.as_ref().and_then(|w| w.0);
        if !wants.any() {
            source.drop_before_window();
        }
        let ((first, ahead), early) = first::first_beside_layouts(
            opts,
            snap,
            source,
            (&geo, &base, preset.0, infer),
            roll_at,
        );
        let mut head = first.lists.unwrap_or_default();
        let mut start_counts = first.counts;
        if let Some(sc) = start_counts.as_mut() {
            time_highs(sc, (opts, preset.0), (&geo, &base), &ahead);
        }
        let whole_start =
            whole.map(|(_, w)| whole_start_used(opts, snap, w, start_counts.as_ref()));
        let text = if wants.any() {
            source.before_window()
        } else {
            Vec::new()
        };
        let (rolls, kept) = first::carry_and_roll(
            (opts, snap, &wants),
            &text,
            (&geo, &base, preset.0),
            start_counts.as_mut(),
        );
        // `--whole-file` starts where the layout was read: from it as read, rolled back.
        let as_read = whole_start::wanted(opts, snap) && snap.is_some_and(|s| s.layout.is_some());
        first::demands(
            &mut head,
            first.hints,
            start_counts.as_ref(),
            rolls,
            &geo,
            as_read,
        );
        // The inferences read a kernel's trace, where untraced work leaves its marks; a trace
        // we wrote ourselves is a closed world (its slow-path drains are our own): `infer`.
        let mut setup = Setup {
            preset,
            base,
            infer,
            start_counts,
            whole_start,
            replayers: Vec::with_capacity(opts.variants.len()),
            emitted: Vec::new(),
            kernel: KernelSide::for_geometry(&geo),
            counted: 0,
            noted: (0, kernel::Notes::default()),
            geo,
            snaps,
        };
        setup.add_replayers(opts, &head, &early, &ahead)?;
        let seen = setup.set_from_before((&text, kept.as_ref()), &wants, &head.first_named);
        if let Some(sc) = setup.start_counts.as_ref().filter(|_| wants.free_count) {
            whole_start::set_free_counts(sc, &setup.geo, &setup.replayers, &seen);
        }
        // The walk's kernel side goes on in the pass, with the pageblock types just seeded.
        if let Some(h) = first.kernel {
            setup.noted = h.into_pass(&mut setup.kernel);
        }
        // Only the pass's side (and the walk's it goes on from) infers bulk takes off a
        // list's head, not the other walks'.
        (setup.kernel).set_bulk_takes_head(infer && setup.preset.0.bulk_takes_head());
        (setup.kernel).set_appeared_takes(opts.first_free_takes(infer));
        setup.numbering(opts, source);
        Ok(setup)
    }

    /// What the text before the window (`text`, its events `kept` where the carry's or the
    /// roll's parse kept them) sets, where asked ([`Wants`]: a `free_factor` start, the
    /// vmstat workers' last runs), and the kernel side's pageblock types with the ones the
    /// first events name (`first_named`). Per zone, per CPU: whether the text showed its
    /// lists' `free_count` (empty where the walk did not run).
    fn set_from_before(
        &mut self,
        (text, kept): (&[u8], Option<&Kept>),
        wants: &Wants,
        first_named: &[(u64, u8)],
    ) -> Vec<Vec<bool>> {
        // Before 6.7 a CPU's `free_factor` decides its drains, and only the trace before
        // the marker shows it; from 6.7 `free_count` and `PCPF_PREV_FREE_HIGH_ORDER` do, and
        // each CPU's worker decays `high` on its own second, which the runs before the marker
        // show. One parse of the text feeds the walks asked for.
        let rules = (wants.free_factor || wants.free_count)
            .then(|| free_factor::rules_of(&self.replayers, &self.base))
            .flatten();
        let geo = &self.geo;
        let walk = |on: bool| rules.clone().filter(|_| on);
        let mut factors = walk(wants.free_factor).map(|r| free_factor::Walk::new(geo, r));
        let mut counts = walk(wants.free_count).map(|r| free_count::Walk::new(geo, r));
        let mut runs = wants.runs.then(|| worker_runs::Walk::new(geo.cpus));
        if factors.is_some() || counts.is_some() || runs.is_some() {
            let mut feed = |ev: &crate::trace::parse::Event<'_>| {
                if let Some(w) = factors.as_mut() {
                    w.feed(ev);
                }
                if let Some(w) = counts.as_mut() {
                    w.feed(ev);
                }
                if let Some(w) = runs.as_mut() {
                    w.feed(ev);
                }
            };
            match kept {
                Some(k) => k.events().for_each(|ev| feed(&ev)),
                None => free_factor::each_event(text, feed),
            }
        }
        if let Some(f) = factors.map(free_factor::Walk::finish) {
            free_factor::set(&f, &self.replayers);
        }
        let mut seen = Vec::new();
        if let Some(states) = counts.map(free_count::Walk::finish) {
            free_count::set(&states, &self.replayers);
            seen = (states.iter())
                .map(|z| z.iter().map(|s| s.seen).collect())
                .collect();
        }
        if let Some(last) = runs.map(worker_runs::Walk::finish) {
            for r in self.replayers.iter_mut().filter(|r| r.decay) {
                r.set_worker_runs_before(&last);
            }
        }
        self.kernel.block_types = kernel::BlockTypes::new(self.base.pageblock_order);
        let names_page = self.preset.0.extfrag_names_page();
        self.kernel.set_extfrag_names_page(names_page);
        for &(pfn, mt) in first_named {
            self.kernel.block_types.name(pfn, mt);
        }
        seen
    }

    /// One [`Replayer`] per variant of `opts`, its zones set up from the snapshot (their lists
    /// as `head` infers) where there is one.
    fn add_replayers(
        &mut self,
        opts: &ReplayOptions,
        head: &pcp_state::Head,
        early: &[Option<layout::Early>],
        ahead: &RunsAhead,
    ) -> Result<(), String> {
        let n = opts.variants.len();
        for spec in &opts.variants {
            let mut v = Variant::parse_on(spec, &self.base)?;
            if opts.no_pcp {
                v.cfg.pcp.enabled = false;
            }
            let cfgs = self.zone_configs(opts, spec)?;
            let out: Option<Box<dyn Write>> = match &opts.emit {
                Some(p) => {
                    let p = emit_path(p, &v.name, n);
                    let f = File::create(&p).map_err(|e| format!("--emit {}: {e}", p.display()))?;
                    self.emitted.push(p);
                    Some(Box::new(BufWriter::with_capacity(1 << 16, f)))
                }
                None => None,
            };
            let snap = self.snaps.before.as_ref();
            let mut r = Replayer::with_zones(v, &self.geo, out, &cfgs, snap, &head.zones, early)?;
            let decay = cfgs.first().is_some_and(|c| c.pcp.decay && c.pcp.enabled);
            // Several nodes: the workers run for the remote pagesets' expiry (numa::Expiry)
            // on a kernel without the decay too (their decay then does nothing).
            r.decay = (decay || r.numa.is_some()) && !opts.no_decay;
            r.set_vmstat(opts.hz, opts.decay_waits_for_event, opts.jiffies_phase_ns);
            r.set_late_workers(!opts.no_late_workers);
            // No kworker inside a free call (replayer::decay, `inside_free`).
            r.mid_free_no_switch = self.preset.0.voluntary_preempt();
            r.traced_workers = !opts.no_traced_workers;
            r.set_timer_wheel(opts.timer_wheel);
            // The counters' lag, folded by the workers (replayer::stat_drift).
            r.set_vmstat_drift(r.decay && self.preset.0.vmstat_drift());
            r.set_runs_ahead(ahead.clone());
            // A kernel's batched frees reach the lists at their commits.
            r.commit_at_batched = self.infer;
            // 7.2's vfree frees a contiguous range as aligned blocks (replayer::contig_free).
            r.contig_free = super::replayer::contig_free_on(self.preset.0, self.infer, opts);
            // A free's drain at its traced lines, after the refills other CPUs began
            // under the zone lock before them (replayer::lock_order).
            r.set_lock_order(self.infer && !opts.no_lock_order, opts.refill_ahead);
            // Two CPUs' refills in the order of their zone_locked lines
            // (replayer::refill_order).
            r.set_refill_order(!opts.no_refill_order);
            r.held_frees.clone_from(&head.held_frees);
            // The remote pagesets' countdowns at the snapshot (numa::Expiry).
            if let Some(n) = r.numa.as_mut() {
                n.expiry.start(&r.zones, |c| self.geo.cpu_node(c));
                n.expiry.counts_pending =
                    zonealloc::numa::NumaConfig::for_kernel(self.preset.0.version())
                        .expire_counts_pending;
            }
            self.replayers.push(r);
        }
        Ok(())
    }

    /// Per zone: the snapshot's sizes on the preset, then the variant `spec`'s knobs.
    fn zone_configs(
        &self,
        opts: &ReplayOptions,
        spec: &str,
    ) -> Result<Vec<zonealloc::ZoneConfig>, String> {
        let mut cfgs = Vec::with_capacity(self.geo.zones.len());
        for z in &self.geo.zones {
            let kz = self
                .snaps
                .before
                .as_ref()
                .and_then(|s| s.zone(z.node, z.zone_type));
            let zbase = match kz {
                Some(kz) => proc_setup::zone_config(&self.base, kz, self.preset.0),
                None => self.base,
            };
            let mut c = Variant::parse_on(spec, &zbase)?.cfg;
            if opts.no_pcp {
                c.pcp.enabled = false;
            }
            cfgs.push(c);
        }
        Ok(cfgs)
    }

    /// The prefix's whole look, if the zones came first (the geometry's CPU count did not
    /// depend on it), and the numbering it decides, given to the geometry and every
    /// replayer. Without the inferences the kernel side only counts, whatever the numbering:
    /// it counts the prefix's events as the look takes them, while the parse goes on (the
    /// first [`Setup::counted`] events of the pass).
    fn numbering(&mut self, opts: &ReplayOptions, source: &mut Source) {
        let (infer, geo, kernel) = (self.infer, &self.geo, &mut self.kernel);
        let mut counted = 0u64;
        source.look_with(|ev| {
            if !infer {
                kernel.add_counts(ev, geo.zone_of(ev.kind.pfn()).unwrap_or(0));
                counted += 1;
            }
        });
        self.counted = counted;
        self.geo.numbering = source.numbering(opts.numbering);
        for r in self.replayers.iter_mut() {
            r.set_numbering(self.geo.numbering);
        }
    }
}

/// What the set-up reads in the text before the window.
struct Wants {
    /// A `free_factor` start: before 6.7 a CPU's `free_factor` decides its drains.
    free_factor: bool,
    /// A `free_count` start: from 6.7 a CPU's `free_count` and `PCPF_PREV_FREE_HIGH_ORDER`
    /// decide its drains.
    free_count: bool,
    /// The vmstat workers' last runs: from 6.7 each CPU's worker decays `high` on its own
    /// second.
    runs: bool,
    /// The kernel's layout rolled forward to the window's start (`roll_forward`).
    roll: bool,
}

impl Wants {
    /// What `opts` ask for on `snap` and the preset's `base`, with the inferences on where
    /// `infer`.
    fn of(
        opts: &ReplayOptions,
        snap: Option<&ProcSnapshot>,
        base: &zonealloc::ZoneConfig,
        infer: bool,
    ) -> Wants {
        let free_factor = infer && snap.is_some() && base.pcp.free_scaling.is_free_factor();
        let free_count = infer && snap.is_some() && !base.pcp.free_scaling.is_free_factor();
        let runs = infer && snap.is_some() && base.pcp.decay && !opts.no_decay;
        let runs = runs && opts.jiffies_phase_ns.is_none();
        // The default window only (its start is the snapshot's end), never the whole file.
        let default_window = opts.window.from.is_none() && opts.window.to.is_none();
        let roll = snap.is_some_and(|s| s.layout.is_some())
            && !opts.whole_file
            && default_window
            && opts.infer_layout_roll.or(opts.infer).unwrap_or(true);
        Wants {
            free_factor,
            free_count,
            runs,
            roll,
        }
    }

    /// Whether any of the text before the window is read.
    fn any(&self) -> bool {
        self.free_factor || self.free_count || self.runs || self.roll
    }
}

/// The `high`s the start-count walk read at the file's start (`--whole-file` from 6.7 on),
/// the worker's runs the trace's lines do not count timed on the schedule the replay's
/// workers keep ([`crate::trace::replay::vmstat::Schedule`]), set up as each replayer sets
/// up its own (`Replayer::new_vmstat`; with `--whole-file` no text comes before the window,
/// so no run before it places a timer, `Vmstat::set_runs_before`).
fn time_highs(
    sc: &mut start_count::StartCounts,
    (opts, preset): (&ReplayOptions, Kernel),
    (geo, base): (&Geometry, &zonealloc::ZoneConfig),
    ahead: &RunsAhead,
) {
    let Some(first) = sc.walk_start_ns().filter(|_| sc.has_timed_highs()) else {
        return;
    };
    if !base.pcp.decay || !base.pcp.enabled || opts.no_decay {
        return;
    }
    let hz = opts.hz.map_or(DEFAULT_HZ, |h| h.max(1));
    let traced = !opts.no_traced_workers && ahead.traced();
    let placed = (
        opts.timer_wheel,
        opts.jiffies_phase_ns,
        !opts.no_late_workers,
    );
    let schedule = Vmstat::placed(geo.cpus, hz, placed, ahead, traced).schedule(first);
    // No kworker inside a free call (`Replayer::mid_free_no_switch`, as `add_replayers`).
    let schedule = schedule.no_switch_in_free(preset.voluntary_preempt());
    sc.time_highs(|cpu, t, pauses| schedule.runs_around(cpu, t, pauses));
}

/// The start state `--whole-file` used (`w`), its counts named: the snapshot's where the
/// inference is off, else as `start_counts` set them ([`WholeStart::with_counts`]).
fn whole_start_used(
    opts: &ReplayOptions,
    snap: Option<&ProcSnapshot>,
    w: WholeStart,
    start_counts: Option<&start_count::StartCounts>,
) -> WholeStart {
    match w.why {
        None if !whole_start::wanted(opts, snap) => WholeStart {
            counts: "snapshot",
            why: Some("--infer whole-start=off".to_owned()),
            ..w
        },
        _ => w.with_counts(start_counts),
    }
}

/// The zones' shape: the snapshot's zones, else the flags' (or the trace's) span.
fn geometry(
    opts: &ReplayOptions,
    snap: Option<&ProcSnapshot>,
    source: &Source,
) -> Result<Geometry, String> {
    let numbering = source.numbering(opts.numbering);
    match snap {
        Some(s) => proc_setup::geometry(s, opts.cpus, numbering),
        None => Geometry::from_flags(
            opts.zone_start,
            opts.zone_pages,
            opts.online,
            opts.cpus,
            source.so_far(),
            numbering,
        ),
    }
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
