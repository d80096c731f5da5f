//! What `zonealloc trace replay` is asked to do: the options a replay is set up from
//! ([`super::setup`]).

use std::path::PathBuf;

use super::geometry::Online;
use super::preset::Kernel;
use crate::trace::ingest::Window;
use crate::trace::migratetype::Numbering;

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
    /// Zone size in frames (default: [`super::span_from_trace`], onlined as the
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
    /// Replay what the trace shows without a cause ([`super::kernel`]): drains and untraced
    /// allocations (default: with `--proc`).
    pub infer: Option<bool>,
    /// Start each CPU's lists from the count the trace pins at its start
    /// ([`super::start_count`]; default: off, `Some(true)` turns it on).
    pub infer_start_count: Option<bool>,
    /// Infer which lists each CPU's count is on from the window's first
    /// [`super::first_events::LIST_EVENTS`] events ([`super::pcp_state`]; default: as `infer`).
    pub infer_lists: Option<bool>,
    /// With `--whole-file` and `--proc`: start from the kernel's state at the file's start,
    /// zoneinfo's counts rolled back from their read ([`super::whole_start`]; default: on
    /// there, as `infer`).
    pub infer_whole_start: Option<bool>,
    /// Roll the kernel's layout forward from its read to the window's start
    /// ([`super::layout::RollWalk`]; default: as `infer`, with a kernel layout and the
    /// default window only).
    pub infer_layout_roll: Option<bool>,
    /// The lists' walk reads on past the window, through the text the end state replays
    /// ([`super::infer::pcp_state::Head::past`]; default: as `infer_lists`, with the default
    /// window and `--proc-after`, where that text is kept).
    pub infer_lists_after: Option<bool>,
    /// A page whose first event is a batch's free, freed again with no allocation between,
    /// was on that CPU's list from the start (`KernelSide::appeared`; default: off,
    /// `Some(true)` turns it on where `infer` is).
    pub infer_first_free_takes: Option<bool>,
    /// No vmstat workers' `decay_pcp_high` even where the kernel family has it.
    pub no_decay: bool,
    /// Free 7.2's contiguous-range frees (`vfree`) page by page, not as aligned blocks
    /// (`free_prepared_contig_range`).
    pub no_contig_free: bool,
    /// Apply a free's drain whole at its commit, not at its traced lines in the trace's
    /// order of zone-lock sections (`replayer::lock_order`).
    pub no_lock_order: bool,
    /// With the lock order, a refill a drain's chunk waits for made ahead of its allocation
    /// line where the draining CPU moves on first (`replayer::lock_order`).
    pub refill_ahead: bool,
    /// With the lock order, two CPUs' refills made in the order of their `zone_locked`
    /// lines, not at their allocations' lines (`replayer::refill_order`) turned off.
    pub no_refill_order: bool,
    /// The kernel's `HZ` for the vmstat workers' timers (default
    /// [`super::vmstat::DEFAULT_HZ`]).
    pub hz: Option<u32>,
    /// An idle CPU's expired vmstat worker waits for its next traced event
    /// ([`super::vmstat::Vmstat::set_defer_to_event`]).
    pub decay_waits_for_event: bool,
    /// A busy CPU's expired vmstat worker runs at its expiry, not when its CPU's task lets it
    /// ([`super::vmstat::Vmstat::set_late_runs`]), nor an idle CPU's whose decay would drain
    /// for its CPU to wake ([`super::vmstat::Vmstat::hold_woken`]).
    pub no_late_workers: bool,
    /// The vmstat workers' and shepherd's runs the trace shows are ignored (by default each
    /// is the run: [`super::vmstat::Vmstat::set_traced`]).
    pub no_traced_workers: bool,
    /// The vmstat workers' timers fire at their bucket on the timer wheel, not at their
    /// expiry ([`super::vmstat::Vmstat::set_timer_wheel`]).
    pub timer_wheel: bool,
    /// The trace time of a jiffies-second boundary for the vmstat workers' timers
    /// ([`super::vmstat::Vmstat::set_phase`]; default: from the trace's first worker run).
    pub jiffies_phase_ns: Option<u64>,
    /// Set the zones up from this `/proc` snapshot folder.
    pub proc: Option<PathBuf>,
    /// Compare the end state with this `/proc` snapshot folder.
    pub proc_after: Option<PathBuf>,
    /// Leave out the snapshots' pfn layouts ([`crate::procfs::ProcSnapshot::layout`]): the
    /// start is synthesised as for a capture without them.
    pub no_layout: bool,
    /// The part of the trace to replay (with `--proc` and no markers given: between
    /// `KT_SNAPSHOT_BEFORE_END` and `KT_SNAPSHOT_AFTER_BEGIN`, where the trace has them).
    pub window: Window,
    /// Replay from the file's start even with `--proc` (`window` then has no `from`; its `to`
    /// is `--to-marker`'s, where given: the file's start to that marker).
    pub whole_file: bool,
}

/// The fragmentation samples a replay takes when not told (`--samples`' default).
pub const DEFAULT_SAMPLES: u64 = 200;

/// A replay of the `upstream` variant with every flag at its default, as `zonealloc trace
/// replay FILE` runs it.
impl Default for ReplayOptions {
    fn default() -> ReplayOptions {
        ReplayOptions {
            variants: vec!["upstream".into()],
            kernel: None,
            zone_start: None,
            zone_pages: None,
            online: None,
            cpus: None,
            no_pcp: false,
            numbering: None,
            samples: DEFAULT_SAMPLES,
            emit: None,
            strict: false,
            infer: None,
            infer_start_count: None,
            infer_lists: None,
            infer_whole_start: None,
            infer_layout_roll: None,
            infer_lists_after: None,
            infer_first_free_takes: None,
            no_decay: false,
            no_contig_free: false,
            no_lock_order: false,
            refill_ahead: false,
            no_refill_order: false,
            hz: None,
            decay_waits_for_event: false,
            no_late_workers: false,
            no_traced_workers: false,
            timer_wheel: false,
            jiffies_phase_ns: None,
            proc: None,
            proc_after: None,
            no_layout: false,
            window: Window::default(),
            whole_file: false,
        }
    }
}

impl ReplayOptions {
    /// Whether a page first freed in a batch and freed again counts as on its list from the
    /// start (`KernelSide::appeared`), the inferences being `infer`: off unless named.
    pub fn first_free_takes(&self, infer: bool) -> bool {
        infer && self.infer_first_free_takes.unwrap_or(false)
    }
}
