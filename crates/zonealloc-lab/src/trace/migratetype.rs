//! Migratetype numbering in traces, which changed in Linux 4.4.
//!
//! The tracepoints print `enum migratetype` as a number. Before 4.4 the enum was
//! `UNMOVABLE, RECLAIMABLE, MOVABLE, PCPTYPES = RESERVE, CMA?, ISOLATE?`. Linux 4.4 swapped
//! Movable and Reclaimable, so that the gfp-to-migratetype conversion became a mask and a
//! shift, and replaced `MIGRATE_RESERVE` with the HighAtomic reserve. A trace therefore has to be read with the
//! numbering of the kernel that wrote it.
//!
//! The numbering can be inferred: an `mm_page_alloc` whose `gfp_flags` name `__GFP_MOVABLE`
//! (directly or through `GFP_HIGHUSER_MOVABLE` and the `GFP_TRANSHUGE` masks) requested
//! Movable, and one naming `__GFP_RECLAIMABLE` requested Reclaimable. Hex flags give no
//! evidence: their bit positions changed between releases.

use std::fmt;

/// Which `enum migratetype` numbering a trace uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Numbering {
    /// Linux 4.4 and later: 0 Unmovable, 1 Movable, 2 Reclaimable, 3 HighAtomic.
    #[default]
    Current,
    /// Linux 2.6.24 to 4.3: 0 Unmovable, 1 Reclaimable, 2 Movable, 3 Reserve.
    Legacy,
}

impl Numbering {
    /// The name of migratetype `mt` in this numbering (`migratetype_names`). Above the PCP
    /// types the number depends on `CONFIG_CMA`, so 4 is named for both meanings.
    pub fn name(self, mt: u8) -> &'static str {
        if (self, mt) == (Self::Legacy, 3) {
            return "Reserve";
        }
        match self.to_current(mt) {
            0 => "Unmovable",
            1 => "Movable",
            2 => "Reclaimable",
            3 => "HighAtomic",
            4 => "CMA or Isolate",
            5 => "Isolate",
            _ => "unknown",
        }
    }

    /// `mt` in the current numbering (the one `zonealloc::MigrateType` uses). Legacy 3
    /// (Reserve) has no current equivalent and maps to 3 (HighAtomic), its successor.
    pub fn to_current(self, mt: u8) -> u8 {
        match (self, mt) {
            (Self::Legacy, 1) => 2,
            (Self::Legacy, 2) => 1,
            _ => mt,
        }
    }
}

impl fmt::Display for Numbering {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Current => "current (Linux 4.4 and later)",
            Self::Legacy => "legacy (before Linux 4.4)",
        })
    }
}

/// Allocations whose `gfp_flags` and printed migratetype agree with each numbering.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Evidence {
    /// Allocations consistent only with the current numbering.
    pub current: u64,
    /// Allocations consistent only with the legacy numbering.
    pub legacy: u64,
}

impl Evidence {
    /// Weighs one `mm_page_alloc`: its symbolic `gfp_flags` and printed `migratetype`.
    pub fn add(&mut self, gfp_flags: &str, mt: u8) {
        self.add_expected(Self::expected(gfp_flags), mt);
    }

    /// The migratetype `gfp_flags` asks for in the current numbering, where it tells the
    /// numberings apart: Movable (1) or Reclaimable (2), the two that swapped places.
    pub fn expected(gfp_flags: &str) -> Option<u8> {
        let mut movable = false;
        let mut reclaimable = false;
        for flag in gfp_flags.split('|') {
            match flag.trim() {
                "__GFP_MOVABLE"
                | "GFP_HIGHUSER_MOVABLE"
                | "GFP_TRANSHUGE"
                | "GFP_TRANSHUGE_LIGHT" => movable = true,
                "__GFP_RECLAIMABLE" => reclaimable = true,
                _ => {}
            }
        }
        // Movable and Reclaimable together is GFP_MOVABLE_MASK, an invalid request.
        match (movable, reclaimable) {
            (true, false) => Some(1),
            (false, true) => Some(2),
            _ => None,
        }
    }

    /// Weighs one `mm_page_alloc` whose `gfp_flags` gave `expected` ([`Evidence::expected`]).
    pub fn add_expected(&mut self, expected: Option<u8>, mt: u8) {
        let Some(expected_current) = expected else {
            return;
        };
        if mt == expected_current {
            self.current += 1;
        } else if mt == 3 - expected_current {
            self.legacy += 1;
        }
    }

    /// The numbering the evidence supports: legacy only when more allocations say so
    /// (no evidence, or a tie, keeps the current numbering).
    pub fn verdict(&self) -> Numbering {
        if self.legacy > self.current {
            Numbering::Legacy
        } else {
            Numbering::Current
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_mapping_follow_each_enum() {
        assert_eq!(Numbering::Current.name(1), "Movable");
        assert_eq!(Numbering::Legacy.name(1), "Reclaimable");
        assert_eq!(Numbering::Legacy.name(2), "Movable");
        assert_eq!(Numbering::Legacy.name(3), "Reserve");
        assert_eq!(Numbering::Current.name(3), "HighAtomic");
        assert_eq!(Numbering::Current.name(9), "unknown");
        for mt in 0..8 {
            assert_eq!(Numbering::Current.to_current(mt), mt);
            let legacy = Numbering::Legacy;
            if mt < 3 {
                assert_eq!(
                    Numbering::Current.name(legacy.to_current(mt)),
                    legacy.name(mt)
                );
            }
        }
    }

    #[test]
    fn evidence_reads_symbolic_flags() {
        let mut e = Evidence::default();
        e.add("GFP_HIGHUSER_MOVABLE|__GFP_COMP", 1);
        e.add("GFP_TRANSHUGE", 1);
        e.add("GFP_NOWAIT|__GFP_RECLAIMABLE", 2);
        e.add("GFP_KERNEL", 0); // no evidence
        e.add("0x400dc0", 1); // hex: no evidence
        e.add("__GFP_MOVABLE|__GFP_RECLAIMABLE", 1); // invalid mask: no evidence
        assert_eq!(
            e,
            Evidence {
                current: 3,
                legacy: 0
            }
        );
        assert_eq!(e.verdict(), Numbering::Current);
        e.add("GFP_HIGHUSER_MOVABLE", 2);
        e.add("GFP_HIGHUSER_MOVABLE", 2);
        e.add("GFP_USER|__GFP_RECLAIMABLE", 1);
        e.add("GFP_HIGHUSER_MOVABLE", 0); // page_group_by_mobility_disabled: no evidence
        assert_eq!(
            e,
            Evidence {
                current: 3,
                legacy: 3
            }
        );
        assert_eq!(
            e.verdict(),
            Numbering::Current,
            "a tie keeps the current numbering"
        );
        e.add("__GFP_MOVABLE", 2);
        assert_eq!(e.verdict(), Numbering::Legacy);
    }
}
