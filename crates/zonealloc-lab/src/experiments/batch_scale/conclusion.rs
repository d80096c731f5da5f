//! The seed's conclusion ("the max batch scale factor needs to be less than or equal to 5")
//! drawn from the run's numbers: per cap, its batch and the hold times the verdicts judge
//! (the median bulk free, the seed's "in most times", and both p99s), and the largest cap
//! each keeps under 100 µs beside the seed's answer for it.

use super::Table;

/// The largest cap `k` (batch `63 << k`, the `k`-th swept batch) whose hold time is under
/// `limit_ns`; -1 if none is. `by_batch` holds (batch, hold) in sweep order. (Not "every
/// smaller cap under it too": one preempted hold at a small batch would otherwise hide the
/// answer.)
pub(super) fn largest_cap_under(by_batch: &[(u32, f64)], limit_ns: f64) -> f64 {
    by_batch
        .iter()
        .rposition(|(_, hold)| *hold < limit_ns)
        .map_or(-1.0, |k| k as f64)
}

/// The conclusion table: `holds` is, per swept batch in order, the mean over iterations of
/// [bulk free p50, bulk free p99, refill p99] in ns.
pub(super) fn conclusion_table(holds: &[(u32, [f64; 3])], limit_ns: f64) -> Table {
    let mut rows: Vec<Vec<String>> = holds
        .iter()
        .enumerate()
        .map(|(k, (b, h))| {
            let mut row = vec![k.to_string(), b.to_string()];
            for v in h {
                let under = if *v < limit_ns { "" } else { " (over)" };
                row.push(format!("{:.1}{under}", v / 1000.0));
            }
            row
        })
        .collect();
    let answer = |i: usize, seed: &str| {
        let by: Vec<(u32, f64)> = holds.iter().map(|(b, h)| (*b, h[i])).collect();
        let cap = largest_cap_under(&by, limit_ns);
        if cap < 0.0 {
            format!("none (the seed: {seed})")
        } else {
            format!("{cap} (the seed: {seed})")
        }
    };
    rows.push(vec![
        "largest cap under 100 µs".to_string(),
        String::new(),
        answer(0, "5"),
        answer(1, "4 or 5"),
        answer(2, "4 or 5"),
    ]);
    Table {
        title: "The seed's conclusion from our numbers: per cap (batch 63 << cap), the zone-lock hold times in µs (means over iterations) and the largest cap each keeps under 100 µs; the verdicts judge the same three with their 95% CIs".to_string(),
        header: [
            "cap",
            "batch",
            "bulk free p50 (µs)",
            "bulk free p99 (µs)",
            "refill p99 (µs)",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_answers_per_column_beside_the_seed() {
        let holds = [
            (63, [2e3, 3e3, 4e3]),
            (127, [4e3, 6e3, 8e3]),
            (255, [90e3, 120e3, 99e3]),
        ];
        let t = conclusion_table(&holds, 1e5);
        let last = t.rows.last().unwrap();
        assert_eq!(last[2], "2 (the seed: 5)");
        assert_eq!(last[3], "1 (the seed: 4 or 5)");
        assert_eq!(last[4], "2 (the seed: 4 or 5)");
        assert_eq!(t.rows[2][3], "120.0 (over)");
    }
}
