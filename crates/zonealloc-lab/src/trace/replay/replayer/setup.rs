//! A replayer's set-up: its zones, each configured for the traced machine's CPUs, brought
//! online as [`Geometry::online`] says (all free, from a `/proc` snapshot, or as the trace
//! touches them), and the `--emit` writer.

use std::io::Write;

use zonealloc::{Pfn, Zone, ZoneConfig};

use super::{add_counts, zone_counts};
use crate::procfs::ProcSnapshot;
use crate::trace::emit::TraceWriter;
use crate::trace::replay::geometry::{Geometry, Online};
use crate::trace::replay::infer::pcp_state;
use crate::trace::replay::layout::Early;
use crate::trace::replay::proc_setup;

/// The zones of a replayer, set up, and what their set-up reached.
pub(super) struct Zones {
    /// The zones, as [`Geometry::zones`].
    pub(super) zones: Vec<Zone>,
    /// Per zone, one bit per `MAX_PAGE_ORDER` block, none online yet.
    pub(super) online: Vec<Vec<u64>>,
    /// Per zone set up from a snapshot, the pages in use there.
    pub(super) pools: Vec<proc_setup::Pool>,
    /// Per zone set up from a snapshot, what its set-up reached.
    pub(super) setup: Vec<proc_setup::SetupFacts>,
    /// PCP hits, PCP misses and zone-lock acquisitions of the set-up.
    pub(super) setup_counts: (u64, u64, u64),
}

/// What a replayer's zones are set up from: the geometry, one configuration per zone (`cfgs`,
/// else `cfg`), and with a snapshot (`snap`) the lists' `demand` and the `early` layouts,
/// one per zone.
pub(super) struct ZoneSources<'a> {
    pub(super) geo: &'a Geometry,
    pub(super) cfg: ZoneConfig,
    pub(super) cfgs: &'a [ZoneConfig],
    pub(super) snap: Option<&'a ProcSnapshot>,
    pub(super) demand: &'a [pcp_state::ListDemand],
    pub(super) early: &'a [Option<Early>],
}

impl ZoneSources<'_> {
    /// The zones, each set up ([`ZoneSources::zone_config`], populated from the snapshot);
    /// `err` names the variant in an error.
    pub(super) fn zones(
        &self,
        err: &dyn Fn(&dyn std::fmt::Display) -> String,
    ) -> Result<Zones, String> {
        let geo = self.geo;
        let block_shift = u32::from(self.cfg.max_order);
        let mut z = Zones {
            zones: Vec::with_capacity(geo.zones.len()),
            online: Vec::with_capacity(geo.zones.len()),
            pools: Vec::new(),
            setup: Vec::new(),
            setup_counts: (0, 0, 0),
        };
        for (i, span) in geo.zones.iter().enumerate() {
            let (start, end) = (span.start, span.end());
            let zone = Zone::new(span.zone_type, Pfn(start), Pfn(end), self.zone_config(i))
                .map_err(|e| err(&e))?;
            match (geo.online, self.snap) {
                (Online::All, _) => {
                    zone.add_free_range(Pfn(start), Pfn(end))
                        .map_err(|e| err(&e))?;
                }
                (Online::Snapshot, Some(snap)) => {
                    let (pool, facts) = self.populate(&zone, i, snap).map_err(|e| err(&e))?;
                    z.pools.push(pool);
                    z.setup.push(facts);
                    z.setup_counts = add_counts(z.setup_counts, zone_counts(&zone));
                }
                _ => {}
            }
            zone.record_events(true);
            z.zones.push(zone);
            let blocks = (end - (start >> block_shift << block_shift)).div_ceil(1 << block_shift);
            z.online.push(vec![0u64; blocks.div_ceil(64) as usize]);
        }
        Ok(z)
    }

    /// Zone `i`'s configuration, for the traced machine's CPUs and, with a snapshot, the
    /// set-up's own ([`proc_setup::SETUP_CPUS`]).
    fn zone_config(&self, i: usize) -> ZoneConfig {
        let extra = if self.snap.is_some() {
            proc_setup::SETUP_CPUS
        } else {
            0
        };
        let mut zcfg = self
            .cfgs
            .get(i)
            .copied()
            .unwrap_or(self.cfg)
            .with_cpus(self.geo.cpus + extra);
        // zone_highsize splits `high` across the traced machine's CPUs
        // (`cpumask_of_node`); the set-up's own CPU is none of them. Split across all
        // five, 6.12's auto-tuned range (not printed, so computed) came out a fifth
        // short: 6.12-4g p_thp's CPU 0 drained 2136 pages the kernel kept.
        if extra > 0 && zcfg.pcp.split_cpus.is_none() {
            zcfg.pcp.split_cpus = Some(self.geo.cpus);
        }
        zcfg
    }

    /// Zone `i` set up as the snapshot's zone of its node and type
    /// ([`proc_setup::populate_from`]).
    fn populate(
        &self,
        zone: &Zone,
        i: usize,
        snap: &ProcSnapshot,
    ) -> Result<(proc_setup::Pool, proc_setup::SetupFacts), String> {
        let span = &self.geo.zones[i];
        let kz = snap
            .zone(span.node, span.zone_type)
            .ok_or_else(|| format!("no {} in the snapshot", self.geo.zone_label(i)))?;
        let early = self.early.get(i).and_then(Option::as_ref);
        proc_setup::populate_from(zone, snap, kz, self.demand.get(i), early)
    }
}

/// The `--emit` writer, its header written for `geo`'s CPUs.
pub(super) fn emit_writer(
    emit: Option<Box<dyn Write>>,
    geo: &Geometry,
    pageblock_order: u8,
) -> Result<Option<TraceWriter<Box<dyn Write>>>, String> {
    let Some(w) = emit else {
        return Ok(None);
    };
    let mut w = TraceWriter::new(w, "zonealloc", pageblock_order);
    w.header(geo.cpus).map_err(|e| format!("--emit: {e}"))?;
    Ok(Some(w))
}
