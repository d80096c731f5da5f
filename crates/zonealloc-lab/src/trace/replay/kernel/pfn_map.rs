//! What the kernel's side remembers per traced frame, in a chunked array indexed by pfn
//! instead of three hash maps: the kernel's own `mem_map` is an array indexed by pfn
//! (`pfn_to_page`, sparsemem's sections), and so is this, one chunk of [`CHUNK`] frames at a
//! time as the trace touches them.
//!
//! One lookup per event finds all three facts of a frame (its allocation count, the CPU whose
//! lists it was last put on, the refill that put it there), where the maps hashed the pfn up
//! to four times. A chunk's slot is found in a flat directory for the pfns of any real machine
//! (below [`DIRECT_PFNS`]), else in a seeded hash map, so a crafted pfn costs one chunk, not a
//! directory reaching up to it.

use crate::trace::stats::HashMap;

/// Frames per chunk: one 512-frame pageblock of the usual x86 geometry, 12 KiB of entries.
const CHUNK_SHIFT: u32 = 9;
const CHUNK: usize = 1 << CHUNK_SHIFT;
/// Pfns below this (2^30 frames, 4 TiB of 4 KiB pages) find their chunk in the flat
/// directory, which grows to the highest chunk touched (4 bytes a chunk, at most 8 MiB).
pub const DIRECT_PFNS: u64 = 1 << 30;
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
    /// That refill's migratetype (the trace's numbering).
    refilled_mt: u8,
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

    /// Takes the refill fact, leaving none.
    #[inline]
    pub fn take_refilled(&mut self) -> Option<(u32, u8)> {
        let r = self.refilled();
        self.set_refilled(None);
        r
    }
}

/// [`PfnFacts`] per pfn, chunk by chunk.
#[derive(Debug, Default)]
pub struct PfnMap {
    /// Per chunk number below [`DIRECT_PFNS`]: its slot, or [`NO_SLOT`].
    direct: Vec<u32>,
    /// Chunk number -> slot for the chunks above.
    far: HashMap<u64, u32>,
    /// Slot `s` holds entries `s * CHUNK ..` of the frames of chunk `chunk_of_slot[s]`.
    entries: Vec<PfnFacts>,
    chunk_of_slot: Vec<u64>,
}

impl PfnMap {
    /// The slot of `pfn`'s chunk, if touched.
    #[inline]
    fn slot(&self, chunk: u64) -> Option<u32> {
        if chunk < DIRECT_PFNS >> CHUNK_SHIFT {
            self.direct
                .get(chunk as usize)
                .copied()
                .filter(|&s| s != NO_SLOT)
        } else {
            self.far.get(&chunk).copied()
        }
    }

    /// The facts of `pfn` (all zero when never touched).
    #[inline]
    pub fn get(&self, pfn: u64) -> PfnFacts {
        match self.slot(pfn >> CHUNK_SHIFT) {
            Some(s) => self.entries[s as usize * CHUNK + (pfn as usize & (CHUNK - 1))],
            None => PfnFacts::default(),
        }
    }

    /// The facts of `pfn`, its chunk added (all zero) if new.
    #[inline]
    pub fn get_mut(&mut self, pfn: u64) -> &mut PfnFacts {
        let chunk = pfn >> CHUNK_SHIFT;
        let s = match self.slot(chunk) {
            Some(s) => s,
            None => self.add_chunk(chunk),
        };
        &mut self.entries[s as usize * CHUNK + (pfn as usize & (CHUNK - 1))]
    }

    #[cold]
    fn add_chunk(&mut self, chunk: u64) -> u32 {
        // Slots are bounded by the entries' vector: it fails to grow long before 2^32 chunks.
        let s = self.chunk_of_slot.len() as u32;
        self.chunk_of_slot.push(chunk);
        self.entries
            .resize(self.entries.len() + CHUNK, PfnFacts::default());
        if chunk < DIRECT_PFNS >> CHUNK_SHIFT {
            let c = chunk as usize;
            if c >= self.direct.len() {
                self.direct.resize(c + 1, NO_SLOT);
            }
            self.direct[c] = s;
        } else {
            self.far.insert(chunk, s);
        }
        s
    }

    /// Every touched pfn with its facts, chunk by chunk in the order they were touched.
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map answers as a hash map does, for pfns in the directory, at its edge, and far
    /// above it (up to the top of the pfn space), whatever order they come in.
    #[test]
    fn the_map_agrees_with_a_hash_map_near_and_far() {
        let mut m = PfnMap::default();
        let mut want: std::collections::HashMap<u64, PfnFacts> = Default::default();
        let pfns = [
            0,
            1,
            511,
            512,
            0x4_0000,
            DIRECT_PFNS - 1,
            DIRECT_PFNS,
            DIRECT_PFNS + 513,
            u64::MAX,
            u64::MAX - 511,
            7,
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
        assert_eq!(m.get(2), PfnFacts::default());
        assert_eq!(m.get(DIRECT_PFNS + 1024), PfnFacts::default());
        let mut seen: Vec<(u64, u64)> = m
            .iter()
            .filter(|(_, f)| f.allocs > 0)
            .map(|(p, f)| (p, f.allocs))
            .collect();
        seen.sort_unstable();
        let mut expect: Vec<(u64, u64)> = want.iter().map(|(&p, f)| (p, f.allocs)).collect();
        expect.sort_unstable();
        assert_eq!(seen, expect);
        // The directory reaches only the highest chunk below the limit.
        assert_eq!(m.direct.len() as u64, (DIRECT_PFNS >> CHUNK_SHIFT));
        // Far chunks: DIRECT_PFNS, the one after it, and the top one (two pfns).
        assert_eq!(m.far.len(), 3);
    }

    #[test]
    fn facts_round_trip_and_forget() {
        let mut f = PfnFacts::default();
        assert_eq!((f.last_free_cpu(), f.refilled()), (None, None));
        f.set_last_free_cpu(Some(0));
        f.set_refilled(Some((0, 0)));
        assert_eq!((f.last_free_cpu(), f.refilled()), (Some(0), Some((0, 0))));
        assert_eq!(f.take_refilled(), Some((0, 0)));
        assert_eq!(f.refilled(), None);
        f.set_last_free_cpu(None);
        assert_eq!(f, PfnFacts::default());
    }
}
