//! Whether two snapshots are of one machine and kernel: a `--proc` (before) and a
//! `--proc-after` snapshot must be, or the end state is compared with another machine's.

use super::ProcSnapshot;

impl ProcSnapshot {
    /// `Ok` if `after` could have been read from the machine and kernel `self` was: the same
    /// zoneinfo format and optional lines (which tell the kernel generation), pageblock order,
    /// orders and migratetypes, the same online CPUs, and the same zones with the same start,
    /// span and present pages. Managed pages, free counts and watermarks may change in
    /// between (memory freed at init, a balloon, `min_free_kbytes`). The error says what
    /// differs, `self` first.
    pub fn same_machine(&self, after: &ProcSnapshot) -> Result<(), String> {
        let differ = |what: &str, a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            Err(format!(
                "the snapshots are of different kernels or machines: {what} {a:?} before, \
                 {b:?} after"
            ))
        };
        if (self.format, self.features) != (after.format, after.features) {
            return differ(
                "zoneinfo format",
                &(self.format, self.features),
                &(after.format, after.features),
            );
        }
        if self.pageblock_order.is_some()
            && after.pageblock_order.is_some()
            && self.pageblock_order != after.pageblock_order
        {
            return differ(
                "pageblock order",
                &self.pageblock_order,
                &after.pageblock_order,
            );
        }
        if self.orders != after.orders {
            return differ("orders", &self.orders, &after.orders);
        }
        if !self.migratetypes.is_empty()
            && !after.migratetypes.is_empty()
            && self.migratetypes != after.migratetypes
        {
            return differ("migratetypes", &self.migratetypes, &after.migratetypes);
        }
        if self.cpus != after.cpus {
            return differ("CPUs", &self.cpus, &after.cpus);
        }
        let shape = |s: &ProcSnapshot| -> Vec<(String, u64, u64, u64)> {
            s.zones
                .iter()
                .map(|z| (z.label(), z.start_pfn, z.spanned_pages, z.present_pages))
                .collect()
        };
        let (a, b) = (shape(self), shape(after));
        if a.len() != b.len() {
            let names = |v: &[(String, u64, u64, u64)]| -> Vec<String> {
                v.iter().map(|z| z.0.clone()).collect()
            };
            return differ("populated zones", &names(&a), &names(&b));
        }
        if let Some((x, y)) = a.iter().zip(&b).find(|(x, y)| x != y) {
            return differ("zone (name, start pfn, spanned, present)", x, y);
        }
        Ok(())
    }
}
