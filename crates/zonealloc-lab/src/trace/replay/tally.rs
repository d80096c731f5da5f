//! Counts of the buddy-side events (refills, drains, direct allocations, fallbacks) per zone
//! and CPU: the kernel's, read from the trace ([`super::infer::kernel`]), and each variant's,
//! recorded by its zones (`super::replayer`); and how far one is off the other.

use serde::Serialize;

/// Refill, drain, direct-allocation and fallback counts of one zone on one CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// `mm_page_alloc_zone_locked` with `percpu_refill=1`: blocks taken for a PCP refill.
    pub refills: u64,
    /// Pages of those blocks.
    pub refill_pages: u64,
    /// `mm_page_pcpu_drain`: blocks given back from a PCP list.
    pub drains: u64,
    /// Pages of those blocks.
    pub drain_pages: u64,
    /// `mm_page_alloc_zone_locked` with `percpu_refill=0`: direct buddy allocations.
    pub direct: u64,
    /// Pages of those blocks.
    pub direct_pages: u64,
    /// `mm_page_alloc_extfrag`: fallbacks to another migratetype.
    pub extfrag: u64,
}

/// Reads one count off a [`Tally`].
pub type Count = fn(&Tally) -> u64;

/// The event kinds a fidelity figure is given for: name and how to read it off a [`Tally`].
pub const KINDS: [(&str, Count); 7] = [
    ("refill events", |t| t.refills),
    ("refill pages", |t| t.refill_pages),
    ("drain events", |t| t.drains),
    ("drain pages", |t| t.drain_pages),
    ("direct buddy allocations", |t| t.direct),
    ("direct buddy pages", |t| t.direct_pages),
    ("extfrag events", |t| t.extfrag),
];

impl Tally {
    /// Counts one buddy-side event of `order`.
    #[inline]
    pub fn zone_locked(&mut self, order: u8, percpu_refill: bool) {
        let pages = 1u64 << order.min(63);
        if percpu_refill {
            self.refills += 1;
            self.refill_pages += pages;
        } else {
            self.direct += 1;
            self.direct_pages += pages;
        }
    }

    /// Counts one drained block of `order`.
    #[inline]
    pub fn drain(&mut self, order: u8) {
        self.drains += 1;
        self.drain_pages += 1u64 << order.min(63);
    }
}

/// A [`Tally`] per zone and CPU.
#[derive(Clone, Debug, Serialize)]
pub struct Grid {
    /// Zones.
    pub zones: usize,
    /// CPUs.
    pub cpus: u32,
    /// `zones * cpus` cells, zone-major.
    pub cells: Vec<Tally>,
}

impl Grid {
    /// All zero.
    pub fn new(zones: usize, cpus: u32) -> Grid {
        Grid {
            zones,
            cpus,
            cells: vec![Tally::default(); zones * cpus as usize],
        }
    }

    /// The cell of zone `z` on CPU `cpu`.
    #[inline]
    pub fn at(&mut self, z: usize, cpu: u32) -> &mut Tally {
        &mut self.cells[z * self.cpus as usize + cpu as usize]
    }

    /// The cell of zone `z` on CPU `cpu`.
    pub fn get(&self, z: usize, cpu: u32) -> &Tally {
        &self.cells[z * self.cpus as usize + cpu as usize]
    }

    /// One kind summed over every cell.
    pub fn total(&self, f: fn(&Tally) -> u64) -> u64 {
        self.cells.iter().map(f).sum()
    }
}

/// The headline fidelity figure of one event kind: `sum over cells |ours - kernel|` over the
/// kernel's total, in percent (`None` when the kernel has none of the kind).
pub fn fidelity(ours: &Grid, kernel: &Grid, f: fn(&Tally) -> u64) -> Option<f64> {
    let total = kernel.total(f);
    let diff: u64 = ours
        .cells
        .iter()
        .zip(&kernel.cells)
        .map(|(o, k)| f(o).abs_diff(f(k)))
        .sum();
    (total > 0).then(|| 100.0 * diff as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fidelity_sums_absolute_differences_over_cells() {
        let mut a = Grid::new(1, 2);
        let mut b = Grid::new(1, 2);
        a.at(0, 0).refills = 90;
        a.at(0, 1).refills = 20;
        b.at(0, 0).refills = 100;
        b.at(0, 1).refills = 10;
        // |90 - 100| + |20 - 10| over 110.
        let f = fidelity(&a, &b, |t| t.refills).unwrap();
        assert!((f - 100.0 * 20.0 / 110.0).abs() < 1e-9);
        assert_eq!(fidelity(&a, &b, |t| t.drains), None);
    }
}
