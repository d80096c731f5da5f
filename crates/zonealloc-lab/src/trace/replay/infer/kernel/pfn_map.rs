//! What the kernel's side remembers per traced frame, in a chunked array indexed by pfn
//! instead of three hash maps: the kernel's own `mem_map` is an array indexed by pfn
//! (`pfn_to_page`, sparsemem's sections), and so is this, one chunk of [`CHUNK`] frames at a
//! time as the trace touches them.
//!
//! One lookup per event finds all three facts of a frame (its allocation count, the CPU whose
//! lists it was last put on, the refill that put it there), where the maps hashed the pfn up
//! to four times. The array covers the replay's zones ([`PfnMap::new`]), whose frame table the
//! replay holds anyway; a pfn outside them (a trace from another machine, a crafted line) has
//! an entry of its own in a seeded hash map, so memory grows with the pfns a trace names, not
//! with a chunk for each.

use crate::trace::stats::HashMap;

/// Frames per chunk: one 512-frame pageblock of the usual x86 geometry, 12 KiB of entries.
const CHUNK_SHIFT: u32 = 9;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const NO_SLOT: u32 = u32::MAX;

/// The kernel's side's facts about one traced frame. All zero: nothing known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PfnFacts {
    /// Successful `mm_page_alloc` events of the frame (the seed 000 table's kernel column).
    pub allocs: u64,
    /// The CPU whose lists the frame was last put on (by a free or a refill), plus one; 0
    /// when none is known. (The CPU is folded modulo the replay's count, a `u32`, so it is
    /// below `u32::MAX` and the sum cannot wrap.)
    last_free_cpu: u32,
    /// The CPU whose order-0 refill put the frame on its lists and no traced allocation has
    /// taken it since, plus one; 0 when none.
    refilled_cpu: u32,
    /// With `by_refill`, the refill's timestamp tick (`KernelSide`'s count of distinct
    /// timestamps; 0 for an event without one); it sits in what was the struct's padding.
    listed_tick: u32,
    /// That refill's migratetype (the trace's numbering).
    refilled_mt: u8,
    /// `last_free_cpu` is a refill's (of any order: `rmqueue_bulk` put the frame on that
    /// CPU's lists) and nothing has taken the frame off them since, in the trace.
    by_refill: bool,
    /// What the trace has shown of the frame ([`Shown`]); it sits in what was padding.
    shown: Shown,
}

/// What the trace has shown of a frame, for [`KernelSide::appeared`](super::KernelSide):
/// whether its first event was an order-0 free.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Shown {
    /// No event of the frame yet.
    #[default]
    Nothing,
    /// Its first event was an order-0 `mm_page_free`, and only that: a page the trace never
    /// showed allocated nor on a list, freed.
    FreedFirst,
    /// As `FreedFirst`, and that free's `mm_page_free_batched` came: a free of a batch
    /// (`free_unref_folios`), as `release_pages` gives pages back.
    FreedFirstBatched,
    /// `FreedFirst` (a single free), then freed again on that CPU: whether the free again
    /// is a batch's, its `mm_page_free_batched` tells.
    FreedAgain,
    /// Anything else.
    More,
}

impl PfnFacts {
    /// The CPU whose lists the frame was last put on.
    #[inline]
    pub fn last_free_cpu(&self) -> Option<u32> {
        self.last_free_cpu.checked_sub(1)
    }

    /// Records (or with `None` forgets) the CPU whose lists the frame was put on.
    #[inline]
    pub fn set_last_free_cpu(&mut self, cpu: Option<u32>) {
        self.last_free_cpu = cpu.map_or(0, |c| c + 1);
        self.listed_tick = 0;
        self.by_refill = false;
    }

    /// A refill (`mm_page_alloc_zone_locked` with `percpu_refill=1`, of any order) at
    /// timestamp tick `tick` put the frame on `cpu`'s lists.
    #[inline]
    pub fn set_refill_listed(&mut self, cpu: u32, tick: u32) {
        self.last_free_cpu = cpu + 1;
        self.listed_tick = tick;
        self.by_refill = true;
    }

    /// The CPU whose refill put the frame on its lists, while it is still there as far as the
    /// trace shows (no allocation, free, drain or buddy allocation of it since).
    #[inline]
    pub fn refill_listed(&self) -> Option<u32> {
        self.last_free_cpu().filter(|_| self.by_refill)
    }

    /// [`refill_listed`](Self::refill_listed) with the refill's timestamp tick.
    #[inline]
    pub fn refill_listed_at(&self) -> Option<(u32, u32)> {
        self.refill_listed().map(|cpu| (cpu, self.listed_tick))
    }

    /// The frame left the lists its refill put it on (a drain, or the buddy handed it out).
    #[inline]
    pub fn clear_refill_listed(&mut self) {
        self.by_refill = false;
    }

    /// The refill (CPU, migratetype) that put the frame on a CPU's lists, if no traced
    /// allocation has taken it since.
    #[inline]
    pub fn refilled(&self) -> Option<(u32, u8)> {
        self.refilled_cpu
            .checked_sub(1)
            .map(|cpu| (cpu, self.refilled_mt))
    }

    /// Records (or with `None` forgets) the refill that put the frame on a CPU's lists.
    #[inline]
    pub fn set_refilled(&mut self, r: Option<(u32, u8)>) {
        (self.refilled_cpu, self.refilled_mt) = r.map_or((0, 0), |(cpu, mt)| (cpu + 1, mt));
    }

    /// What the trace has shown of the frame.
    #[inline]
    pub fn shown(&self) -> Shown {
        self.shown
    }

    /// Records what the trace has shown of the frame.
    #[inline]
    pub fn set_shown(&mut self, shown: Shown) {
        self.shown = shown;
    }

    /// Takes the refill fact, leaving none.
    #[inline]
    pub fn take_refilled(&mut self) -> Option<(u32, u8)> {
        let r = self.refilled();
        self.set_refilled(None);
        r
    }
}

/// [`PfnFacts`] per pfn: chunk by chunk within the replay's zones, one by one outside.
#[derive(Clone, Debug, Default)]
pub struct PfnMap {
    /// The first chunk number of the array.
    first_chunk: u64,
    /// Per chunk of the array's span: its slot, or [`NO_SLOT`] while untouched.
    direct: Vec<u32>,
    /// Slot `s` holds entries `s * CHUNK ..` of the frames of chunk `chunk_of_slot[s]`.
    entries: Vec<PfnFacts>,
    chunk_of_slot: Vec<u64>,
    /// The pfns outside the array's span.
    sparse: HashMap<u64, PfnFacts>,
}

impl PfnMap {
    /// A map whose array covers `span` (the replay's zones, from the lowest start to the
    /// highest end), its chunks allocated as the trace touches them.
    pub fn new(span: std::ops::Range<u64>) -> PfnMap {
        let first_chunk = span.start >> CHUNK_SHIFT;
        // The chunks holding a pfn of the span (none for an empty one).
        let chunks = match span.end.checked_sub(1) {
            Some(last) if span.start < span.end => (last >> CHUNK_SHIFT) - first_chunk + 1,
            _ => 0,
        };
        PfnMap {
            first_chunk,
            direct: vec![NO_SLOT; usize::try_from(chunks).unwrap_or(0)],
            ..PfnMap::default()
        }
    }

    /// Where `pfn`'s chunk lies in the directory, if the array covers it.
    #[inline]
    fn dir_index(&self, pfn: u64) -> Option<usize> {
        let c = (pfn >> CHUNK_SHIFT).checked_sub(self.first_chunk)?;
        (c < self.direct.len() as u64).then_some(c as usize)
    }

    /// The facts of `pfn` (all zero when never touched).
    // `always`: the kernel side's accounting, inlined at two calls, did not inline it.
    #[inline(always)]
    pub fn get(&self, pfn: u64) -> PfnFacts {
        match self.dir_index(pfn) {
            Some(d) => match self.direct[d] {
                NO_SLOT => PfnFacts::default(),
                s => self.entries[s as usize * CHUNK + (pfn as usize & (CHUNK - 1))],
            },
            None => self.sparse.get(&pfn).copied().unwrap_or_default(),
        }
    }

    /// The facts of `pfn`, its chunk (or its entry) added, all zero, if new.
    // `always`: as [`PfnMap::get`].
    #[inline(always)]
    pub fn get_mut(&mut self, pfn: u64) -> &mut PfnFacts {
        // The array's touched chunks inline (every event of the replay's zones after their
        // first); a new chunk or a pfn outside the array out of line.
        match self.dir_index(pfn).map(|d| self.direct[d]) {
            Some(s) if s != NO_SLOT => {
                &mut self.entries[s as usize * CHUNK + (pfn as usize & (CHUNK - 1))]
            }
            _ => self.get_mut_slow(pfn),
        }
    }

    #[cold]
    #[inline(never)]
    fn get_mut_slow(&mut self, pfn: u64) -> &mut PfnFacts {
        let Some(d) = self.dir_index(pfn) else {
            return self.sparse.entry(pfn).or_default();
        };
        let s = match self.direct[d] {
            NO_SLOT => self.add_chunk(d, pfn >> CHUNK_SHIFT),
            s => s,
        };
        &mut self.entries[s as usize * CHUNK + (pfn as usize & (CHUNK - 1))]
    }

    #[cold]
    fn add_chunk(&mut self, d: usize, chunk: u64) -> u32 {
        // At most one slot per directory entry, which a `u32` holds for any zone.
        let s = self.chunk_of_slot.len() as u32;
        self.chunk_of_slot.push(chunk);
        self.entries
            .resize(self.entries.len() + CHUNK, PfnFacts::default());
        self.direct[d] = s;
        s
    }

    /// Every touched pfn with its facts: the array's chunk by chunk in the order they were
    /// touched, then the pfns outside it.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &PfnFacts)> + '_ {
        self.chunk_of_slot
            .iter()
            .enumerate()
            .flat_map(move |(s, &chunk)| {
                self.entries[s * CHUNK..(s + 1) * CHUNK]
                    .iter()
                    .enumerate()
                    .map(move |(i, f)| ((chunk << CHUNK_SHIFT) + i as u64, f))
            })
            .chain(self.sparse.iter().map(|(&p, f)| (p, f)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map answers as a hash map does, for pfns in the array, at its edges, and far
    /// outside it (up to the top of the pfn space), whatever order they come in; only the
    /// array's pfns take chunks.
    #[test]
    fn the_map_agrees_with_a_hash_map_near_and_far() {
        let span = 0x1000..0x1000 + 5 * CHUNK as u64 + 7;
        let mut m = PfnMap::new(span.clone());
        let mut want: std::collections::HashMap<u64, PfnFacts> = Default::default();
        let pfns = [
            0,
            1,
            span.start - 1,
            span.start,
            span.start + 511,
            span.start + 512,
            span.end - 1,
            span.end,
            span.end + 600,
            1 << 40,
            u64::MAX,
            u64::MAX - 511,
            span.start + 7,
        ];
        for (k, &pfn) in pfns.iter().enumerate().chain(pfns.iter().enumerate()) {
            let f = m.get_mut(pfn);
            f.allocs += 1;
            f.set_last_free_cpu(Some(k as u32));
            f.set_refilled((k % 2 == 0).then_some((u32::MAX - 1, 3)));
            let w = want.entry(pfn).or_default();
            w.allocs += 1;
            w.set_last_free_cpu(Some(k as u32));
            w.set_refilled((k % 2 == 0).then_some((u32::MAX - 1, 3)));
        }
        for (&pfn, w) in &want {
            assert_eq!(m.get(pfn), *w, "{pfn:#x}");
        }
        assert_eq!(m.get(span.start + 2), PfnFacts::default());
        assert_eq!(m.get(span.end + 1), PfnFacts::default());
        let mut seen: Vec<(u64, u64)> = m
            .iter()
            .filter(|(_, f)| f.allocs > 0)
            .map(|(p, f)| (p, f.allocs))
            .collect();
        seen.sort_unstable();
        let mut expect: Vec<(u64, u64)> = want.iter().map(|(&p, f)| (p, f.allocs)).collect();
        expect.sort_unstable();
        assert_eq!(seen, expect);
        // Chunks only for the array's pfns (start's, start + 512's, the one of end - 1 and
        // end, the span ending inside it); every other pfn an entry of its own.
        assert_eq!(m.chunk_of_slot.len(), 3, "{:?}", m.chunk_of_slot);
        assert_eq!(m.sparse.len(), 7);
        // No span: every pfn an entry of its own.
        let mut none = PfnMap::default();
        none.get_mut(5).allocs = 1;
        assert_eq!((none.get(5).allocs, none.chunk_of_slot.len()), (1, 0));
    }

    #[test]
    fn facts_round_trip_and_forget() {
        let mut f = PfnFacts::default();
        assert_eq!((f.last_free_cpu(), f.refilled()), (None, None));
        f.set_refill_listed(2, 7);
        assert_eq!((f.last_free_cpu(), f.refill_listed()), (Some(2), Some(2)));
        assert_eq!(f.refill_listed_at(), Some((2, 7)));
        f.clear_refill_listed();
        assert_eq!(f.refill_listed_at(), None);
        assert_eq!((f.last_free_cpu(), f.refill_listed()), (Some(2), None));
        f.set_refill_listed(2, 7);
        // A free puts it on the freeing CPU's lists: no longer the refill's.
        f.set_last_free_cpu(Some(1));
        assert_eq!(f.refill_listed(), None);
        f.set_last_free_cpu(Some(0));
        f.set_refilled(Some((0, 0)));
        assert_eq!((f.last_free_cpu(), f.refilled()), (Some(0), Some((0, 0))));
        assert_eq!(f.take_refilled(), Some((0, 0)));
        assert_eq!(f.refilled(), None);
        f.set_last_free_cpu(None);
        assert_eq!(f, PfnFacts::default());
    }

    #[test]
    fn the_listing_tick_costs_no_memory() {
        // One entry per frame of the zones: the tick sits in what was padding.
        assert_eq!(std::mem::size_of::<PfnFacts>(), 24);
    }
}
