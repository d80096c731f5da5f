//! Watermarks: how much free memory a zone keeps back, and the check every allocation passes
//! (`__setup_per_zone_wmarks`, `setup_per_zone_lowmem_reserve`). The check itself
//! (`__zone_watermark_ok`, `zone_watermark_fast`) reads the lock-free mirror in `shared.rs`.

use crate::config::{WatermarkConfig, ZoneConfig};
use crate::types::{ZoneType, MAX_NR_ZONES};

/// A zone's watermarks in pages (`zone->_watermark[]` and `watermark_boost`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Watermarks {
    /// `WMARK_MIN`: below this only reserve-entitled requests succeed.
    pub min: u64,
    /// `WMARK_LOW`: the fast path's mark.
    pub low: u64,
    /// `WMARK_HIGH`: the mark `ZONE_BELOW_HIGH` is measured against.
    pub high: u64,
    /// `WMARK_PROMO`.
    pub promo: u64,
    /// `watermark_boost`, added to every mark while fallbacks fragment the zone.
    pub boost: u64,
}

impl Watermarks {
    /// The boosted mark for index 0 (min), 1 (low) or 2 (high) (`wmark_pages`).
    #[inline]
    pub fn mark(&self, index: usize) -> u64 {
        let base = match index {
            0 => self.min,
            1 => self.low,
            _ => self.high,
        };
        base + self.boost
    }
}

/// One zone's share of a node, as the watermark setup sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ZoneSize {
    pub(crate) zone_type: ZoneType,
    pub(crate) managed: u64,
}

/// `int_sqrt`.
fn int_sqrt(x: u64) -> u64 {
    if x < 2 {
        return x;
    }
    // Newton's method on integers (no float sqrt in core).
    let mut r = 1u64 << (64 - x.leading_zeros()).div_ceil(2);
    loop {
        let next = (r + x / r) / 2;
        if next >= r {
            return r;
        }
        r = next;
    }
}

/// `calculate_min_free_kbytes`: `clamp(int_sqrt(lowmem_kbytes * 16), 128, 262144)`.
pub(crate) fn default_min_free_kbytes(lowmem_kbytes: u64) -> u64 {
    int_sqrt(lowmem_kbytes * 16).clamp(128, 262_144)
}

fn mult_frac(x: u64, n: u64, d: u64) -> u64 {
    (x / d) * n + (x % d) * n / d
}

/// `__setup_per_zone_wmarks` and `setup_per_zone_lowmem_reserve` for the zones of one node,
/// returning each zone's watermarks and lowmem reserves. `cfg` supplies the sysctls (the node
/// uses its first zone's); zones with `WatermarkConfig::Fixed` keep their fixed marks.
///
/// An automatic `min_free_kbytes` is `calculate_min_free_kbytes`'s, raised by
/// `set_recommended_min_free_kbytes` when khugepaged starts ([`khugepaged_min_free_kbytes`]):
/// the boot order of `init_per_zone_wmark_min` then `hugepage_init`, over one managed count.
pub(crate) fn setup_node_watermarks(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
) -> (
    [Watermarks; MAX_NR_ZONES],
    [[u64; MAX_NR_ZONES]; MAX_NR_ZONES],
) {
    let unset = [Watermarks::default(); MAX_NR_ZONES];
    let mfk = calculate_min_free_kbytes(zones, cfgs, &unset);
    let mut out = setup_per_zone_wmarks(zones, cfgs, mfk);
    if let Some(raised) = khugepaged_min_free_kbytes(zones, cfgs, &out, mfk) {
        out = setup_per_zone_wmarks(zones, cfgs, raised);
    }
    (out, setup_per_zone_lowmem_reserve(zones, cfgs))
}

/// `nr_free_buffer_pages()`: the managed pages above the high mark (`wm`) of every zone up
/// to Normal.
fn nr_free_buffer_pages(zones: &[ZoneSize], wm: &[Watermarks]) -> u64 {
    zones
        .iter()
        .zip(wm)
        .filter(|(z, _)| z.zone_type <= ZoneType::Normal)
        .map(|(z, w)| z.managed.saturating_sub(w.high))
        .sum()
}

/// `calculate_min_free_kbytes` over the managed pages of now and the high marks `wm` (all
/// zero at `init_per_zone_wmark_min`, the first setup of boot).
pub(crate) fn calculate_min_free_kbytes(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
    wm: &[Watermarks],
) -> u64 {
    let page_size = cfgs.first().map_or(4096, |c| c.page_size);
    default_min_free_kbytes(nr_free_buffer_pages(zones, wm) * page_size / 1024)
}

/// `hugepage_init` → `start_stop_khugepaged` → `set_recommended_min_free_kbytes`
/// (`mm/khugepaged.c`) over the managed pages of now, `wm` being the marks set before and
/// `mfk` the `min_free_kbytes` of before: the `min_free_kbytes` of the watermark setup that
/// ends it, or `None` where khugepaged does not start (the first zone's
/// `thp_min_free_kbytes` off, or `hugepage_init`'s small-memory rule,
/// `thp_min_totalram_mib`), and nothing is recomputed.
pub(crate) fn khugepaged_min_free_kbytes(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
    wm: &[Watermarks],
    mfk: u64,
) -> Option<u64> {
    let c = cfgs.first().filter(|c| c.thp_min_free_kbytes)?;
    // hugepage_init: `if (totalram_pages() < MB_TO_PAGES(512)) { transparent_hugepage_flags
    // = 0; return 0; }`, before start_stop_khugepaged.
    let totalram: u64 = zones.iter().map(|z| z.managed).sum();
    if (totalram as u128) * (c.page_size as u128) < (c.thp_min_totalram_mib as u128) << 20 {
        return None;
    }
    // 2 + MIGRATE_PCPTYPES^2 pageblocks per populated zone up to Normal, at most 5% of
    // nr_free_buffer_pages() (less the high marks set before), raised only.
    let nr_zones = zones
        .iter()
        .filter(|z| z.zone_type <= ZoneType::Normal && z.managed > 0)
        .count() as u64;
    let pcptypes = crate::types::MIGRATE_PCPTYPES as u64;
    let recommended = (c.pageblock_pages() * nr_zones * (2 + pcptypes * pcptypes))
        .min(nr_free_buffer_pages(zones, wm) / 20);
    // Then setup_per_zone_wmarks, whether raised or not (`update_wmarks:`).
    Some(mfk.max(recommended * c.page_size / 1024))
}

/// `__setup_per_zone_wmarks` with `auto_mfk` as the `min_free_kbytes` of zones whose
/// configuration leaves it automatic.
pub(crate) fn setup_per_zone_wmarks(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
    auto_mfk: u64,
) -> [Watermarks; MAX_NR_ZONES] {
    let mut out = [Watermarks::default(); MAX_NR_ZONES];
    setup_per_zone_wmarks_into(zones, cfgs, auto_mfk, &mut out);
    out
}

/// [`setup_per_zone_wmarks`] over any number of zones (every populated zone of every node,
/// as `__setup_per_zone_wmarks`'s `for_each_zone` walks them: `lowmem_pages` is the sum over
/// all nodes), into `out` (one entry per zone; zones beyond `out` are left out).
pub(crate) fn setup_per_zone_wmarks_into(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
    auto_mfk: u64,
    out: &mut [Watermarks],
) {
    // 6.12+ leave ZONE_MOVABLE out of lowmem and cap its min like highmem; 6.1 does not.
    let movable_high = cfgs.first().is_some_and(|c| c.movable_like_highmem);
    let is_low = |z: &ZoneSize| match z.zone_type {
        ZoneType::HighMem => false,
        ZoneType::Movable => !movable_high,
        _ => true,
    };
    let lowmem_pages: u64 = zones.iter().filter(|z| is_low(z)).map(|z| z.managed).sum();
    for (i, (z, cfg)) in zones.iter().zip(cfgs).enumerate() {
        let wm = match cfg.watermarks {
            WatermarkConfig::Fixed { min, low, high } => Watermarks {
                min,
                low,
                high,
                promo: high + (high - low),
                boost: 0,
            },
            WatermarkConfig::Auto { min_free_kbytes } => {
                let mfk = min_free_kbytes.unwrap_or(auto_mfk);
                // pages_min = min_free_kbytes >> (PAGE_SHIFT - 10)
                let pages_min = mfk * 1024 / cfg.page_size;
                let tmp = if lowmem_pages == 0 {
                    0
                } else {
                    ((pages_min as u128 * z.managed as u128) / lowmem_pages as u128) as u64
                };
                let min = if is_low(z) {
                    tmp
                } else {
                    (z.managed / 1024).clamp(32, 128)
                };
                let step = (tmp >> 2).max(mult_frac(
                    z.managed,
                    cfg.watermark_scale_factor as u64,
                    10000,
                ));
                Watermarks {
                    min,
                    low: min + step,
                    high: min + 2 * step,
                    promo: min + 3 * step,
                    boost: 0,
                }
            }
        };
        if let Some(slot) = out.get_mut(i) {
            *slot = wm;
        }
    }
}

/// `setup_per_zone_lowmem_reserve`: zone i keeps back (managed of zone types above it, up to
/// and including j) / `ratio[i]` from requests whose highest zone type is j. Absent zone types
/// count as empty, as the kernel's unpopulated zones do.
pub(crate) fn setup_per_zone_lowmem_reserve(
    zones: &[ZoneSize],
    cfgs: &[ZoneConfig],
) -> [[u64; MAX_NR_ZONES]; MAX_NR_ZONES] {
    let mut reserve = [[0u64; MAX_NR_ZONES]; MAX_NR_ZONES];
    let mut managed_by_type = [0u64; MAX_NR_ZONES];
    for z in zones {
        managed_by_type[z.zone_type.index()] += z.managed;
    }
    for (i, z) in zones.iter().enumerate() {
        let ti = z.zone_type.index();
        let ratio = cfgs[i].lowmem_reserve_ratio[ti] as u64;
        let clear = ratio == 0 || z.managed == 0;
        let mut upper = 0u64;
        for j in ti + 1..MAX_NR_ZONES {
            upper += managed_by_type[j];
            reserve[i][j] = if clear { 0 } else { upper / ratio };
        }
    }
    reserve
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_worked_example_4m_pages() {
        // Spec §4.4: one lowmem zone of 4,000,000 managed pages, 4 KiB pages.
        let zones = [ZoneSize {
            zone_type: ZoneType::Normal,
            managed: 4_000_000,
        }];
        let (wm, _) = setup_node_watermarks(&zones, &[ZoneConfig::default()]);
        assert_eq!(default_min_free_kbytes(16_000_000), 16000);
        assert_eq!(wm[0].min, 4000);
        assert_eq!(wm[0].low, 8000);
        assert_eq!(wm[0].high, 12000);
        assert_eq!(wm[0].promo, 16000);
    }

    #[test]
    fn khugepaged_raises_min_free_kbytes_to_11_pageblocks_per_zone() {
        // set_recommended_min_free_kbytes: DMA + DMA32 of the 6.1 2048 MiB boot (early
        // managed): 2 zones * 11 pageblocks = 11264 pages = 45056 KiB; min = 11264 * E / L.
        let zones = [
            ZoneSize {
                zone_type: ZoneType::Dma,
                managed: 3840,
            },
            ZoneSize {
                zone_type: ZoneType::Dma32,
                managed: 499_571 - 2433,
            },
        ];
        let thp = ZoneConfig {
            thp_min_free_kbytes: true,
            ..ZoneConfig::default()
        };
        let (wm, _) = setup_node_watermarks(&zones, &[thp; 2]);
        assert_eq!((wm[0].min, wm[1].min), (86, 11177)); // snap/boot/zoneinfo
                                                         // THP off: the sqrt rule alone (int_sqrt(16 * 4 * 500978) = 5662 KiB).
        let (wm, _) = setup_node_watermarks(&zones, &[ZoneConfig::default(); 2]);
        assert_eq!(wm[1].min, 5662 / 4 * 497_138 / 500_978);
        // The 5% cap of nr_free_buffer_pages(): two zones of 600 MiB together get less than
        // 11 pageblocks each.
        let mid = [
            ZoneSize {
                zone_type: ZoneType::Dma,
                managed: 3840,
            },
            ZoneSize {
                zone_type: ZoneType::Dma32,
                managed: 150_000,
            },
        ];
        let (wm, _) = setup_node_watermarks(&mid, &[thp; 2]);
        let (sqrt, _) = setup_node_watermarks(&mid, &[ZoneConfig::default(); 2]);
        let nfbp = 3840 - sqrt[0].high + 150_000 - sqrt[1].high;
        assert!(nfbp / 20 < 2 * 5632);
        assert_eq!(wm[1].min, nfbp / 20 * 150_000 / 153_840);
    }

    #[test]
    fn hugepage_init_leaves_thp_off_below_512_mib() {
        // totalram_pages() < 512 MiB: khugepaged never starts, the square-root rule stays.
        let thp = ZoneConfig {
            thp_min_free_kbytes: true,
            ..ZoneConfig::default()
        };
        let zone = |managed| {
            [ZoneSize {
                zone_type: ZoneType::Normal,
                managed,
            }]
        };
        let below = zone((512 << 8) - 1);
        let (on, _) = setup_node_watermarks(&below, &[thp]);
        let (off, _) = setup_node_watermarks(&below, &[ZoneConfig::default()]);
        assert_eq!(on[0], off[0]);
        assert_eq!(khugepaged_min_free_kbytes(&below, &[thp], &off, 4000), None);
        // At 512 MiB it starts: 11 pageblocks (5632 pages) for one zone, under the 5% cap.
        let at = zone(512 << 8);
        let raised = khugepaged_min_free_kbytes(&at, &[thp], &off, 128).unwrap();
        assert_eq!(raised, 5632 * 4);
        // The knob at 0 keeps THP on at every size (the raise of before).
        let always = thp.with_thp_min_totalram_mib(0);
        assert!(khugepaged_min_free_kbytes(&below, &[always], &off, 128).is_some());
    }

    #[test]
    fn min_free_kbytes_is_clamped() {
        assert_eq!(default_min_free_kbytes(0), 128);
        assert_eq!(default_min_free_kbytes(1 << 40), 262_144);
    }

    #[test]
    fn lowmem_reserve_follows_ratio() {
        let zones = [
            ZoneSize {
                zone_type: ZoneType::Dma32,
                managed: 1 << 20,
            },
            ZoneSize {
                zone_type: ZoneType::Normal,
                managed: 1 << 22,
            },
        ];
        let cfgs = [ZoneConfig::default(); 2];
        let (_, res) = setup_node_watermarks(&zones, &cfgs);
        assert_eq!(res[0][ZoneType::Normal.index()], (1 << 22) / 256);
        assert_eq!(res[1][ZoneType::Normal.index()], 0);
    }
}
