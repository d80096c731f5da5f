//! PCP sizing: `zone_batchsize`, `zone_highsize` and the vmstat threshold, recomputed whenever
//! the watermarks are (`zone_pcp_update` from `setup_per_zone_wmarks`).

/// `zone_batchsize` (CONFIG_MMU): about 0.025% of the zone, at most 256 KiB of pages, rounded
/// to `2^n - 1` for cache colouring.
pub(crate) fn zone_batchsize(managed_pages: u64, page_size: u64) -> u32 {
    let b = (managed_pages >> 12).min((256 * 1024) / page_size);
    if b <= 1 {
        return 1;
    }
    let v = b + b / 2;
    // rounddown_pow_of_two(v) - 1
    ((1u64 << (63 - v.leading_zeros())) - 1) as u32
}

/// `zone_highsize`: `total / nr_split`, at least `4 * batch`. `total` is managed/fraction when
/// the high fraction is set, else the low watermark. From 6.7 `zone_set_pageset_high_and_batch`
/// takes `high_min` with the sysctl's fraction (0: the low watermark) and `high_max` with
/// `MIN_PERCPU_PAGELIST_HIGH_FRACTION` (8), split over `cpus` (the node's CPUs).
pub fn zone_highsize(
    managed_pages: u64,
    low_wmark: u64,
    batch: u32,
    cpus: u32,
    high_fraction: u32,
) -> u32 {
    let total = if high_fraction != 0 {
        managed_pages / high_fraction as u64
    } else {
        low_wmark
    };
    let nr_split = cpus.max(1) as u64;
    let high = total / nr_split;
    high.max((batch as u64) << 2).min(i32::MAX as u64) as u32
}

/// `calculate_normal_threshold` (the `vm stats threshold` line of `/proc/zoneinfo`).
pub(crate) fn stat_threshold(managed_pages: u64, cpus: u32, page_size: u64) -> u32 {
    let fls = |x: u64| 64 - x.leading_zeros();
    let page_shift = page_size.trailing_zeros();
    let mem = managed_pages >> (27u32.saturating_sub(page_shift));
    (2 * fls(cpus as u64) * (1 + fls(mem))).min(125)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_follows_the_kernel_table() {
        // managed / 4096 -> batch: <=1 -> 1, 2 -> 1, 3..5 -> 3, 6..10 -> 7, 11..21 -> 15,
        // 22..42 -> 31, >= 43 -> 63.
        for (units, want) in [
            (1, 1),
            (2, 1),
            (3, 3),
            (5, 3),
            (6, 7),
            (10, 7),
            (11, 15),
            (21, 15),
            (22, 31),
            (42, 31),
            (43, 63),
            (1000, 63),
        ] {
            assert_eq!(zone_batchsize(units * 4096, 4096), want, "{units}");
        }
        assert_eq!(zone_batchsize(1 << 30, 65536), 3);
    }

    #[test]
    fn spec_worked_example_high_min_and_max() {
        // 4,000,000 pages, 8 CPUs, low watermark 8000: high_min 1000, high_max 62500.
        assert_eq!(zone_highsize(4_000_000, 8000, 63, 8, 0), 1000);
        assert_eq!(zone_highsize(4_000_000, 8000, 63, 8, 8), 62_500);
        // Never below 4 * batch.
        assert_eq!(zone_highsize(1000, 10, 63, 8, 0), 252);
    }

    #[test]
    fn stat_threshold_is_capped() {
        assert_eq!(stat_threshold(1 << 30, 4096, 4096), 125);
        assert!(stat_threshold(4096, 1, 4096) > 0);
    }
}
