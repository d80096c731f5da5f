//! What one variant's replay remembers per traced frame, in arrays indexed by pfn over the
//! replay's zones instead of five hash maps: the kernel's own `mem_map` is an array indexed
//! by pfn (`pfn_to_page`), and one array load per question is what the replay thread can
//! afford on every event.
//!
//! Every frame stored here lies in one of the replay's zones: the replay rejects a traced
//! frame outside them ([`Geometry::outside`](super::Geometry::outside)) before it records
//! anything about it, and our own frames come from the zones. A question about any other pfn
//! (the head search of a partial free aligns a pfn down, possibly below the span) answers
//! "nothing known", so no pfn can grow memory or panic. The arrays are zeroed lazily
//! (`vec![0; n]` maps zero pages): a frame costs memory only once the trace touches its page
//! of entries, as the core's frame table costs for every frame of the zones anyway.
//!
//! The accessors are `#[inline(always)]`: each is a few instructions, called on every traced
//! allocation and free from functions too large for the compiler to inline them into.

use crate::trace::stats::HashMap;

/// A traced block live in the replay.
#[derive(Clone, Copy, Debug)]
pub(super) struct Live {
    pub(super) ours: u64,
    pub(super) order: u8,
    /// Our zone it came from.
    pub(super) zone: u8,
    /// Pages of it the trace has freed so far (by partial frees).
    pub(super) freed: u64,
}

/// Bits of a packed [`Live`]: our frame (as an offset from the span's start), its order and
/// zone, and whether a partial free has begun (its page count then kept in `freed`).
const OURS_BITS: u32 = 40;
const ORDER_SHIFT: u32 = 40;
const ZONE_SHIFT: u32 = 48;
const PARTIAL: u64 = 1 << 62;
const LIVE: u64 = 1 << 63;

/// [`Frames::marks`] bits.
const FAILED: u8 = 1;
const PENDING_BATCHED: u8 = 2;

/// Per-frame replay state over the pfns `start .. start + len`.
#[derive(Debug, Default)]
pub(super) struct Frames {
    start: u64,
    /// Per traced frame: the live block whose head it is, packed ([`Frames::pack`]); 0 none.
    live: Vec<u64>,
    /// Pages freed so far of the live blocks that a partial free has begun (`split_page`
    /// blocks freed page by page: rare, so kept apart from the array).
    freed: HashMap<u64, u64>,
    /// Per traced frame: [`FAILED`] (its allocation failed here and it is live in the
    /// trace) and [`PENDING_BATCHED`] (freed by `mm_page_free`, its `mm_page_free_batched`
    /// not seen yet).
    marks: Vec<u8>,
    /// Per traced frame: the CPU its deferred free waits on, plus one; 0 none.
    deferred_at: Vec<u32>,
    /// Per frame of ours: the times the replay handed it out (the seed 000 table).
    allocated: Vec<u32>,
    /// The indices of our frames handed out at least once, in the order they first were: the
    /// end's table reads these, not the whole span (most of a large zone never is).
    handed_out: Vec<usize>,
}

impl Frames {
    /// Nothing known, for the pfns of `span` (the replay's zones, lowest start to highest
    /// end).
    pub(super) fn new(span: std::ops::Range<u64>) -> Result<Frames, String> {
        let len = span.end.saturating_sub(span.start);
        let n = usize::try_from(len)
            .ok()
            .filter(|_| len < 1 << OURS_BITS)
            .ok_or_else(|| format!("zones spanning {len} pages cannot be replayed"))?;
        Ok(Frames {
            start: span.start,
            live: vec![0; n],
            freed: HashMap::default(),
            marks: vec![0; n],
            deferred_at: vec![0; n],
            allocated: vec![0; n],
            handed_out: Vec::new(),
        })
    }

    /// `pfn`'s index in the arrays, if they cover it.
    #[inline(always)]
    fn index(&self, pfn: u64) -> Option<usize> {
        let i = pfn.checked_sub(self.start)?;
        (i < self.live.len() as u64).then_some(i as usize)
    }

    /// `pfn`'s index, for a frame of the zones (the replay stores no other: see the module
    /// doc; a store outside is dropped rather than a panic).
    #[inline(always)]
    fn at(&self, pfn: u64) -> Option<usize> {
        let i = self.index(pfn);
        debug_assert!(i.is_some(), "pfn {pfn:#x} outside the replay's zones");
        i
    }

    #[inline(always)]
    fn pack(&self, l: &Live) -> u64 {
        let partial = if l.freed > 0 { PARTIAL } else { 0 };
        LIVE | partial
            | (u64::from(l.zone) << ZONE_SHIFT)
            | (u64::from(l.order) << ORDER_SHIFT)
            | (l.ours - self.start)
    }

    /// The live block whose head is traced frame `pfn`.
    #[inline(always)]
    pub(super) fn live(&self, pfn: u64) -> Option<Live> {
        let v = *self.live.get(self.index(pfn)?)?;
        if v & LIVE == 0 {
            return None;
        }
        let freed = if v & PARTIAL != 0 {
            self.freed.get(&pfn).copied().unwrap_or(0)
        } else {
            0
        };
        Some(Live {
            ours: self.start + (v & ((1 << OURS_BITS) - 1)),
            order: (v >> ORDER_SHIFT) as u8,
            zone: (v >> ZONE_SHIFT) as u8,
            freed,
        })
    }

    /// Whether traced frame `pfn` heads a live block.
    #[inline(always)]
    pub(super) fn is_live(&self, pfn: u64) -> bool {
        self.index(pfn).is_some_and(|i| self.live[i] & LIVE != 0)
    }

    /// Traced frame `pfn` (of the zones) heads `l` now.
    #[inline(always)]
    pub(super) fn set_live(&mut self, pfn: u64, l: Live) {
        let Some(i) = self.at(pfn) else { return };
        let packed = self.pack(&l);
        let was = std::mem::replace(&mut self.live[i], packed);
        // The map only for a partial free: one begun, or one the new block replaces.
        if l.freed > 0 {
            self.freed.insert(pfn, l.freed);
        } else if was & PARTIAL != 0 {
            self.freed.remove(&pfn);
        }
    }

    /// Takes the live block headed by `pfn`, if any.
    #[inline(always)]
    pub(super) fn take_live(&mut self, pfn: u64) -> Option<Live> {
        let l = self.live(pfn)?;
        self.clear_live(pfn);
        Some(l)
    }

    /// Forgets the live block headed by `pfn` (just read with [`Frames::live`]).
    #[inline(always)]
    pub(super) fn clear_live(&mut self, pfn: u64) {
        let Some(i) = self.at(pfn) else { return };
        if std::mem::take(&mut self.live[i]) & PARTIAL != 0 {
            self.freed.remove(&pfn);
        }
    }

    fn mark(&self, pfn: u64, bit: u8) -> bool {
        self.index(pfn).is_some_and(|i| self.marks[i] & bit != 0)
    }

    /// Sets or clears `bit` of traced frame `pfn` (of the zones), saying whether it was set.
    #[inline(always)]
    fn set_mark(&mut self, pfn: u64, bit: u8, on: bool) -> bool {
        let Some(i) = self.at(pfn) else {
            return false;
        };
        let was = self.marks[i] & bit != 0;
        if on {
            self.marks[i] |= bit;
        } else {
            self.marks[i] &= !bit;
        }
        was
    }

    /// Traced frame `pfn`'s allocation failed here (or, with `false`, no longer matters),
    /// saying whether it was so marked.
    #[inline(always)]
    pub(super) fn set_failed(&mut self, pfn: u64, on: bool) -> bool {
        self.set_mark(pfn, FAILED, on)
    }

    /// Whether traced frame `pfn` waits for its `mm_page_free_batched`.
    #[cfg(test)]
    fn pending_batched(&self, pfn: u64) -> bool {
        self.mark(pfn, PENDING_BATCHED)
    }

    /// Traced frame `pfn` waits (or, with `false`, no longer waits) for its
    /// `mm_page_free_batched`, saying whether it waited.
    #[inline(always)]
    pub(super) fn set_pending_batched(&mut self, pfn: u64, on: bool) -> bool {
        self.set_mark(pfn, PENDING_BATCHED, on)
    }

    /// Whether traced frame `pfn`'s allocation failed here.
    pub(super) fn failed(&self, pfn: u64) -> bool {
        self.mark(pfn, FAILED)
    }

    /// The CPU traced frame `pfn`'s deferred free waits on.
    #[inline(always)]
    pub(super) fn deferred_at(&self, pfn: u64) -> Option<u32> {
        let i = self.index(pfn)?;
        self.deferred_at[i].checked_sub(1)
    }

    /// Records (or with `None` forgets) the CPU traced frame `pfn`'s deferred free waits on.
    #[inline(always)]
    pub(super) fn set_deferred_at(&mut self, pfn: u64, cpu: Option<u32>) {
        let Some(i) = self.at(pfn) else { return };
        // A CPU is folded below the replay's count, a `u32`: the sum cannot wrap.
        self.deferred_at[i] = cpu.map_or(0, |c| c + 1);
    }

    /// Counts one more allocation of our frame `ours`, returning the count before it.
    #[inline(always)]
    pub(super) fn count_allocation(&mut self, ours: u64) -> u32 {
        let Some(i) = self.at(ours) else { return 0 };
        let before = self.allocated[i];
        self.allocated[i] = before + 1;
        if before == 0 {
            self.handed_out.push(i);
        }
        before
    }

    /// Our frames handed out at least once, with their counts, in the order they first were.
    pub(super) fn allocated(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.handed_out
            .iter()
            .map(|&i| (self.start + i as u64, self.allocated[i]))
    }
}

/// The `n` first of `items` (pfns, each once, with a count) by count, most first, ties by
/// pfn: what sorting them all gives, in one pass that keeps `n` (a replay's frames number
/// hundreds of thousands, the table shows five).
pub(super) fn most_first<C: Ord + Copy>(
    items: impl Iterator<Item = (u64, C)>,
    n: usize,
) -> Vec<(u64, C)> {
    // `a` comes before `b`.
    let before = |a: &(u64, C), b: &(u64, C)| a.1 > b.1 || (a.1 == b.1 && a.0 < b.0);
    let mut best: Vec<(u64, C)> = Vec::with_capacity(n + 1);
    for it in items {
        if best.len() == n && best.last().is_none_or(|last| !before(&it, last)) {
            continue;
        }
        let at = best.partition_point(|b| before(b, &it));
        best.insert(at, it);
        best.truncate(n);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ours: u64, order: u8, zone: u8, freed: u64) -> Live {
        Live {
            ours,
            order,
            zone,
            freed,
        }
    }

    /// Live blocks round-trip through the packing at the span's edges, with and without a
    /// partial free, and taking one leaves nothing (the partial count included).
    #[test]
    fn live_blocks_round_trip_and_are_taken_once() {
        let span = 0x1000..0x1000 + (1 << 20);
        let mut f = Frames::new(span.clone()).unwrap();
        let cases = [
            (span.start, live(span.end - 1, 20, 3, 0)),
            (span.end - 1, live(span.start, 0, 0, 0)),
            (span.start + 77, live(span.start + 1024, 10, 2, 513)),
        ];
        for &(pfn, l) in &cases {
            assert_eq!(f.live(pfn).map(|x| x.ours), None);
            f.set_live(pfn, l);
        }
        for &(pfn, l) in &cases {
            let got = f.live(pfn).unwrap();
            assert_eq!(
                (got.ours, got.order, got.zone, got.freed),
                (l.ours, l.order, l.zone, l.freed),
                "{pfn:#x}"
            );
            assert!(f.is_live(pfn));
        }
        // The partial count follows the block: cleared when rewritten whole, gone when taken.
        let (pfn, mut l) = cases[2];
        l.freed = 0;
        f.set_live(pfn, l);
        assert_eq!(f.live(pfn).unwrap().freed, 0);
        l.freed = 5;
        f.set_live(pfn, l);
        assert_eq!(f.take_live(pfn).unwrap().freed, 5);
        assert!(f.take_live(pfn).is_none());
        assert!(f.freed.is_empty());
        assert!(!f.is_live(pfn));
    }

    /// Any pfn outside the span is simply unknown: no panic, no memory.
    #[test]
    fn pfns_outside_the_span_are_unknown() {
        let f = Frames::new(0x1000..0x2000).unwrap();
        for pfn in [0, 0xfff, 0x2000, 1 << 40, u64::MAX] {
            assert!(f.live(pfn).is_none() && !f.is_live(pfn));
            assert!(!f.failed(pfn) && !f.pending_batched(pfn));
            assert_eq!(f.deferred_at(pfn), None);
        }
        assert!(Frames::new(0..1 << OURS_BITS).is_err());
        assert!(Frames::new(5..5).is_ok());
    }

    /// The marks, the deferred CPU and the allocation counts are kept apart per frame.
    #[test]
    fn marks_and_counts_are_per_frame() {
        let mut f = Frames::new(0x1000..0x2000).unwrap();
        assert!(!f.set_failed(0x1001, true));
        assert!(!f.set_pending_batched(0x1002, true));
        assert!(f.failed(0x1001) && !f.pending_batched(0x1001));
        assert!(f.pending_batched(0x1002) && !f.failed(0x1002));
        assert!(f.set_failed(0x1001, false));
        assert!(!f.failed(0x1001));
        assert!(f.set_pending_batched(0x1002, false));
        f.set_deferred_at(0x1003, Some(0));
        f.set_deferred_at(0x1004, Some(u32::MAX - 1));
        assert_eq!(
            (f.deferred_at(0x1003), f.deferred_at(0x1004)),
            (Some(0), Some(u32::MAX - 1))
        );
        f.set_deferred_at(0x1003, None);
        assert_eq!(f.deferred_at(0x1003), None);
        assert_eq!(f.count_allocation(0x1fff), 0);
        assert_eq!(f.count_allocation(0x1fff), 1);
        assert_eq!(f.count_allocation(0x1000), 0);
        let got: Vec<(u64, u32)> = f.allocated().collect();
        assert_eq!(got, vec![(0x1fff, 2), (0x1000, 1)]);
    }
}
