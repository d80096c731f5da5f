//! What the set-up reads of the trace before the replay's first event: the window's first
//! events (the list and count inferences' walk, [`first`]), the synthesised layouts made
//! beside it, the text before the window (carried counts, the layout's rolls) and what they
//! give each zone's lists ([`demands`]).

use super::Wants;
use crate::procfs::ProcSnapshot;
use crate::trace::ingest::{Kept, Source};
use crate::trace::replay::geometry::Geometry;
use crate::trace::replay::infer::first_events::{self, FirstEvents};
use crate::trace::replay::infer::{pcp_state, start_count};
use crate::trace::replay::layout;
use crate::trace::replay::options::ReplayOptions;
use crate::trace::replay::preset::Kernel;
use crate::trace::replay::proc_setup;
use crate::trace::replay::vmstat::RunsAhead;

/// [`first`], with the synthesised layouts ([`early_layouts`]) made beside it: they need none
/// of the trace, so they are made on a thread of their own while the inferences' walk and the
/// parse run.
pub(super) fn first_beside_layouts(
    opts: &ReplayOptions,
    snap: Option<&ProcSnapshot>,
    source: &mut Source,
    (geo, base, preset, infer): (&Geometry, &zonealloc::ZoneConfig, Kernel, bool),
    roll_at: Option<start_count::ReadPoint>,
) -> ((FirstEvents, RunsAhead), Vec<Option<layout::Early>>) {
    std::thread::scope(|s| {
        let early = snap.map(|snap| {
            std::thread::Builder::new()
                .name("trace-layout".into())
                .spawn_scoped(s, move || early_layouts(snap, geo, base, preset))
        });
        let first = first(opts, snap, source, (geo, preset, base), (roll_at, infer));
        // Without a thread, each replayer synthesises its own.
        let early = match early {
            Some(Ok(h)) => h.join().unwrap_or_default(),
            _ => Vec::new(),
        };
        (first, early)
    })
}

/// Per zone of `geo`, the layout [`proc_setup::populate`] synthesises where `snap` has no
/// kernel layout, made before the trace's lists are known ([`layout::Early`]): their pages
/// taken to be each CPU's `count` on its Movable order-0 list, as without the list inference.
fn early_layouts(
    snap: &ProcSnapshot,
    geo: &Geometry,
    base: &zonealloc::ZoneConfig,
    kernel: Kernel,
) -> Vec<Option<layout::Early>> {
    let early = |span: &crate::trace::replay::geometry::ZoneSpan| {
        let z = snap.zone(span.node, span.zone_type)?;
        if snap.layout.is_some() || z.managed_pages == 0 {
            return None;
        }
        let cfg = proc_setup::zone_config(base, z, kernel);
        let (pb_order, max_order) = (cfg.pageblock_order, cfg.max_order);
        let targets = layout::targets(snap, z, usize::from(max_order) + 1);
        let pages = z.pagesets.iter().map(|ps| u64::from(ps.count)).sum();
        let pcp = [0, pages, 0, 0, 0];
        Some(layout::Early::synthesise(
            z, targets, pcp, pb_order, max_order,
        ))
    };
    geo.zones.iter().map(early).collect()
}

/// What the text before the window (`text`) carries to its start: in the default window the
/// counts zoneinfo printed, carried to the start marker (`carry_start`), and the layout's
/// rolls to the window's start where asked (`roll_forward`).
pub(super) fn carry_and_roll(
    (opts, snap, wants): (&ReplayOptions, Option<&ProcSnapshot>, &Wants),
    text: &[u8],
    (geo, base, preset): (&Geometry, &zonealloc::ZoneConfig, Kernel),
    start_counts: Option<&mut start_count::StartCounts>,
) -> (Option<Vec<layout::Roll>>, Option<Kept>) {
    use crate::trace::replay::snapshot_reads::{find_before_each, SnapFile};
    use crate::trace::replay::{carry_start, roll_forward};
    let carries = start_counts.is_some() && snap.is_some() && !opts.whole_file;
    // zoneinfo's read, where the carry starts, and pagetypeinfo's, where the roll keeps the
    // counts' state: one scan of the before-snapshot's reads.
    let first = snap.is_some_and(carry_start::zoneinfo_first);
    let [zoneinfo, pagetypeinfo] = match carries || wants.roll {
        true => find_before_each(text, [SnapFile::Zoneinfo, SnapFile::Pagetypeinfo], first),
        false => [None, None],
    };
    let mut carry = match (snap, carries) {
        (Some(s), true) => carry_start::walk(text, (s, geo, zoneinfo.as_ref()), (preset, base)),
        _ => None,
    };
    // 7.2's contiguous-range frees, as the replay reads them with the inferences (the roll
    // is one): `--no-contig-free` turns them off here too.
    let contig = crate::trace::replay::replayer::contig_free_on(preset, true, opts);
    let rules = (base.pcp.thp_order, preset.extfrag_names_page(), contig);
    let mut roll = (wants.roll)
        .then(|| roll_forward::start(text, geo, rules, pagetypeinfo.as_ref()))
        .flatten();
    // The walks after the replayers' set-up read the events this parse keeps.
    let mut keep = (wants.free_factor || wants.free_count || wants.runs).then(Kept::default);
    let walked =
        roll_forward::walk_before(text, geo, (carry.as_mut(), roll.as_mut()), keep.as_mut());
    if let (Some(w), Some(sc)) = (carry, start_counts) {
        carry_start::carry(&w, geo, sc);
    }
    (
        roll.map(roll_forward::Rolls::finish),
        keep.filter(|_| walked),
    )
}

/// Files in `head`, per zone, what the set-up of its lists reads besides the first events'
/// balance: the layout's start `hints`, each CPU's inferred `start_counts` and the layout's
/// `rolls` to the window's start; `as_read`: the layout stands for the file's start
/// ([`layout::StartHints::as_read`]).
pub(super) fn demands(
    head: &mut pcp_state::Head,
    hints: Option<Vec<layout::StartHints>>,
    start_counts: Option<&start_count::StartCounts>,
    rolls: Option<Vec<layout::Roll>>,
    geo: &Geometry,
    as_read: bool,
) {
    fn zone(head: &mut pcp_state::Head, z: usize) -> &mut pcp_state::ListDemand {
        if head.zones.len() <= z {
            head.zones.resize(z + 1, pcp_state::ListDemand::default());
        }
        &mut head.zones[z]
    }
    for (z, h) in hints.into_iter().flatten().enumerate() {
        zone(head, z).hints = layout::StartHints { as_read, ..h };
    }
    if let Some(sc) = start_counts {
        for (z, span) in geo.zones.iter().enumerate() {
            let name = span.zone_type.name();
            let d = zone(head, z);
            d.start_count = (0..geo.cpus)
                .map(|c| sc.count_on(span.node, name, c))
                .collect();
            d.start_floor = (0..geo.cpus)
                .map(|c| sc.floor_on(span.node, name, c))
                .collect();
            d.start_high = (0..geo.cpus)
                .map(|c| sc.high_on(span.node, name, c))
                .collect();
        }
    }
    for (z, roll) in rolls.into_iter().flatten().enumerate() {
        zone(head, z).hints.roll = Some(roll);
    }
}

/// Which lists each CPU's count is on (pcp_state) and each CPU's count at the start marker
/// (start_count), from the window's first events: the parse's own, held for the replay
/// (first_events), so a pipe gets what a file gets. The start counts are on by default where
/// the captures show them closer to the kernel ([`start_count::on_by_default`]); `--infer
/// off` turns them off with the rest. With them, the vmstat workers' first runs among those
/// events ([`RunsAhead`], on kernels with the decay). With the inferences (`infer`) the
/// walk's kernel side is kept for the pass ([`FirstEvents::kernel`]).
fn first(
    opts: &ReplayOptions,
    snap: Option<&ProcSnapshot>,
    source: &mut Source,
    (geo, preset, base): (&Geometry, Kernel, &zonealloc::ZoneConfig),
    (roll_at, infer): (Option<start_count::ReadPoint>, bool),
) -> (FirstEvents, RunsAhead) {
    let lists = snap.is_some() && opts.infer_lists.or(opts.infer).unwrap_or(true);
    // With a read to roll zoneinfo's counts back from (`--whole-file`), the walk runs.
    let counts = snap.is_some()
        && opts
            .infer_start_count
            .or(opts.infer.filter(|on| !on))
            .unwrap_or_else(|| {
                roll_at.is_some() || start_count::on_by_default(preset, opts.whole_file)
            });
    match snap {
        Some(s) if counts || lists => {
            let which = first_events::Which {
                counts,
                lists,
                fixed_high: preset.fixed_high(),
                scale_max: base.pcp.batch_scale_max,
                thp_order: base.pcp.thp_order,
                pageblock_order: base.pageblock_order,
                extfrag_names_page: preset.extfrag_names_page(),
                hz: opts.hz.unwrap_or(crate::trace::replay::vmstat::DEFAULT_HZ),
                roll_at,
                keep_kernel: infer,
                bulk_takes_head: infer && preset.bulk_takes_head(),
                first_free_takes: opts.first_free_takes(infer),
                contig_free: crate::trace::replay::replayer::contig_free_on(preset, infer, opts),
                lists_after: lists && opts.infer_lists_after.or(opts.infer).unwrap_or(true),
                free_high: base.pcp.free_high,
            };
            // The text past the window, where the end state is taken at the after-snapshot's
            // reads: it shows blocks on lists the window never names (`layout::StartHints`).
            let after = source.after_window().cloned();
            // The vmstat workers' first runs among them set their timers' phase; a CPU
            // without a run in the window: its runs past it.
            let mut ahead = RunsAhead::new(geo.cpus);
            let first = first_events::take_to_after(
                || source.next_chunk(),
                geo,
                s,
                which,
                first_events::LIST_EVENTS,
                (after.as_ref(), base.pcp.decay.then_some(&mut ahead)),
            );
            source.unread(first.held);
            let first = FirstEvents {
                held: Vec::new(),
                ..first
            };
            (first, ahead)
        }
        _ => (FirstEvents::default(), RunsAhead::new(geo.cpus)),
    }
}
