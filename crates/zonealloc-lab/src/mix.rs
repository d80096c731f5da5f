//! The mixed request workload, the one `buddyinfo`/`zoneinfo`/`pagetypeinfo` run
//! ([`crate::inspect`]) and `trace gen --workload mixed` writes: mostly small Movable
//! blocks, some Unmovable and Reclaimable ones, a few huge-page-sized blocks. Each caller
//! draws from its own generator in its own order; these map the draws.

use zonealloc::MigrateType;

/// The order of a draw in `0..1000`: 70% order 0, 8% order 1, 6% order 2, 6% order 3,
/// 8.5% order 4, 1% order 9 and 0.5% order 10.
pub fn order(per_mille: u64) -> u8 {
    match per_mille {
        0..=699 => 0,
        700..=779 => 1,
        780..=839 => 2,
        840..=899 => 3,
        900..=984 => 4,
        985..=994 => 9,
        _ => 10,
    }
}

/// The migratetype of a draw in `0..100`: 70% Movable, 20% Unmovable, 10% Reclaimable.
pub fn migratetype(percent: u64) -> MigrateType {
    match percent {
        0..=69 => MigrateType::Movable,
        70..=89 => MigrateType::Unmovable,
        _ => MigrateType::Reclaimable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_are_the_documented_ones() {
        let mut per_order = [0u32; 11];
        for d in 0..1000 {
            per_order[usize::from(order(d))] += 1;
        }
        assert_eq!(per_order, [700, 80, 60, 60, 85, 0, 0, 0, 0, 10, 5]);
        let movable = (0..100).filter(|&d| migratetype(d) == MigrateType::Movable);
        let unmovable = (0..100).filter(|&d| migratetype(d) == MigrateType::Unmovable);
        assert_eq!((movable.count(), unmovable.count()), (70, 20));
    }
}
