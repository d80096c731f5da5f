//! `zonealloc trace stats`: what a trace itself says, before any replay.
//!
//! Event counts per type, allocation orders and migratetypes, events per CPU, the most reused
//! frames (successful `mm_page_alloc` per pfn), frees on a CPU other than the allocating one,
//! PCP refills (`mm_page_alloc_zone_locked` with `percpu_refill=1`) and drains
//! (`mm_page_pcpu_drain`) per CPU, external-fragmentation fallbacks, and malformed lines.
//!
//! A folio freed through `free_unref_folios` is logged as `mm_page_free` and then as
//! `mm_page_free_batched`; the pair is counted as one free. A batched free whose
//! `mm_page_free` came before the trace began counts as a free of its own.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, BufRead};

use super::migratetype::{Evidence, Numbering};
use super::parse::{Event, EventKind, Parser};

/// A map keyed by data from the trace (pfns, gfp strings): foldhash with a random seed per
/// map, so a file cannot pick keys that collide. (Unseeded FxHash, which this replaced, let
/// 100k lines of crafted pfns share one bucket; SipHash would cost a third of the time.)
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A set keyed by data from the trace; see [`HashMap`].
pub type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// How many of the most reused frames and most common gfp flags are listed.
pub const TOP: usize = 5;

/// Per-CPU counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CpuCounts {
    /// Page events logged on this CPU.
    pub events: u64,
    /// `mm_page_alloc_zone_locked` with `percpu_refill=1`.
    pub refills: u64,
    /// `mm_page_pcpu_drain` blocks.
    pub drains: u64,
}

/// The summary of one trace.
#[derive(Debug, Default)]
pub struct TraceStats {
    /// Line accounting and the first malformed lines.
    pub parser: Parser,
    /// Events per tracepoint name.
    pub per_type: BTreeMap<&'static str, u64>,
    /// Successful allocations per order.
    pub orders: BTreeMap<u8, u64>,
    /// Successful allocations per requested migratetype, as printed (see [`Self::numbering`]).
    pub migratetypes: BTreeMap<u8, u64>,
    /// What the allocations' `gfp_flags` say about the migratetype numbering.
    pub evidence: Evidence,
    /// The numbering given by the user; `None` infers it from [`Self::evidence`].
    pub given_numbering: Option<Numbering>,
    /// Counts per CPU (events without a CPU column are not here).
    pub cpus: BTreeMap<u32, CpuCounts>,
    /// Allocations per `gfp_flags` string.
    pub gfp: HashMap<String, u64>,
    /// Successful allocations per pfn.
    pub alloc_per_pfn: HashMap<u64, u64>,
    /// Failed allocations (pfn 0 or NULL page).
    pub failed_allocs: u64,
    /// Frees, a free logged as both `mm_page_free` and `mm_page_free_batched` counted once.
    pub frees: u64,
    /// `mm_page_free_batched` events that repeated an `mm_page_free`.
    pub batched_duplicates: u64,
    /// Frees of frames allocated in the trace on another CPU.
    pub cross_cpu_frees: u64,
    /// Frees of frames not seen allocated in the trace (allocated before it began, or in bulk).
    pub frees_unseen: u64,
    /// `mm_page_alloc_extfrag` events with `fragmenting=1`.
    pub extfrag_fragmenting: u64,
    /// `mm_page_alloc_extfrag` events with `change_ownership=1`.
    pub extfrag_change_ownership: u64,
    /// Extfrag fallbacks per (alloc order, fallback order, alloc mt, fallback mt).
    pub extfrag_fallbacks: BTreeMap<(u8, u8, u8, u8), u64>,
    /// First and last timestamps (ns).
    pub span_ns: Option<(u64, u64)>,
    /// The frames allocations and frees touched: lowest pfn and one past the highest block.
    pub pfn_span: Option<(u64, u64)>,
    /// CPU of the last allocation of each live traced frame.
    live: HashMap<u64, Option<u32>>,
    /// Frames freed by `mm_page_free` whose `mm_page_free_batched` has not been seen yet.
    pending_batched: HashSet<u64>,
}

impl TraceStats {
    /// Reads a whole trace. Input that is no trace ([`Parser::check_trace`]) is an
    /// [`io::ErrorKind::InvalidData`] error, as is a line over the parser's limit.
    pub fn read<R: BufRead>(reader: R) -> io::Result<Self> {
        let mut stats = Self::default();
        let mut parser = Parser::new();
        parser.read_all(reader, |ev| stats.add(ev))?;
        parser.check_trace()?;
        stats.parser = parser;
        Ok(stats)
    }

    /// The migratetype numbering: the given one, or the one the trace's allocations support.
    pub fn numbering(&self) -> Numbering {
        self.given_numbering.unwrap_or(self.evidence.verdict())
    }

    /// Accounts one event.
    pub fn add(&mut self, ev: &Event<'_>) {
        *self.per_type.entry(ev.kind.name()).or_default() += 1;
        if let Some(ts) = ev.ts_ns {
            self.span_ns = Some(match self.span_ns {
                None => (ts, ts),
                Some((a, b)) => (a.min(ts), b.max(ts)),
            });
        }
        let cpu = ev.cpu.map(|c| {
            let k = self.cpus.entry(c).or_default();
            k.events += 1;
            k
        });
        let pfn = ev.kind.pfn();
        let block = match ev.kind {
            EventKind::Alloc { order, .. } if !ev.is_failed_alloc() => Some(order),
            EventKind::Free { order, .. } => Some(order),
            EventKind::FreeBatched { .. } => Some(0),
            _ => None,
        };
        if let Some(order) = block {
            let end = pfn.saturating_add(1u64 << order.min(63));
            self.pfn_span = Some(match self.pfn_span {
                None => (pfn, end),
                Some((a, b)) => (a.min(pfn), b.max(end)),
            });
        }
        match ev.kind {
            EventKind::Alloc {
                order,
                migratetype,
                gfp_flags,
                ..
            } => self.account_alloc(ev, (order, migratetype, gfp_flags)),
            EventKind::Free { .. } => {
                self.frees += 1;
                self.pending_batched.insert(pfn);
                self.account_free(pfn, ev.cpu);
            }
            EventKind::FreeBatched { .. } => {
                if self.pending_batched.remove(&pfn) {
                    self.batched_duplicates += 1;
                } else {
                    self.frees += 1;
                    self.account_free(pfn, ev.cpu);
                }
            }
            EventKind::ZoneLocked { percpu_refill, .. } => {
                if let (Some(c), true) = (cpu, percpu_refill) {
                    c.refills += 1;
                }
            }
            EventKind::PcpuDrain { .. } => {
                if let Some(c) = cpu {
                    c.drains += 1;
                }
            }
            EventKind::Extfrag {
                alloc_order,
                fallback_order,
                alloc_migratetype,
                fallback_migratetype,
                fragmenting,
                change_ownership,
                ..
            } => {
                self.extfrag_fragmenting += u64::from(fragmenting);
                self.extfrag_change_ownership += u64::from(change_ownership);
                *self
                    .extfrag_fallbacks
                    .entry((
                        alloc_order,
                        fallback_order,
                        alloc_migratetype,
                        fallback_migratetype,
                    ))
                    .or_default() += 1;
            }
            // Counted by name in `per_type`.
            EventKind::KswapdWake { .. }
            | EventKind::KswapdSleep { .. }
            | EventKind::VmstatUpdate
            | EventKind::VmstatShepherd
            | EventKind::CompactIsolate { .. } => {}
        }
    }

    /// An `mm_page_alloc` of `order` and `migratetype` with `gfp_flags`, failed or not.
    fn account_alloc(&mut self, ev: &Event<'_>, (order, migratetype, gfp_flags): (u8, u8, &str)) {
        let pfn = ev.kind.pfn();
        self.evidence.add(gfp_flags, migratetype);
        match self.gfp.get_mut(gfp_flags) {
            Some(n) => *n += 1,
            None => {
                self.gfp.insert(gfp_flags.to_owned(), 1);
            }
        }
        if ev.is_failed_alloc() {
            self.failed_allocs += 1;
        } else {
            *self.orders.entry(order).or_default() += 1;
            *self.migratetypes.entry(migratetype).or_default() += 1;
            *self.alloc_per_pfn.entry(pfn).or_default() += 1;
            self.live.insert(pfn, ev.cpu);
            self.pending_batched.remove(&pfn);
        }
    }

    fn account_free(&mut self, pfn: u64, cpu: Option<u32>) {
        match self.live.remove(&pfn) {
            Some(alloc_cpu) => {
                if alloc_cpu.is_some() && cpu.is_some() && alloc_cpu != cpu {
                    self.cross_cpu_frees += 1;
                }
            }
            None => self.frees_unseen += 1,
        }
    }

    /// The `n` most allocated frames, most first (ties by pfn).
    pub fn most_reused(&self, n: usize) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.alloc_per_pfn.iter().map(|(&p, &c)| (p, c)).collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    /// The report as a JSON document (the same numbers as [`TraceStats::render`]).
    pub fn to_json(&self) -> serde_json::Value {
        let p = &self.parser;
        let map = |m: &BTreeMap<u8, u64>| -> serde_json::Map<String, serde_json::Value> {
            m.iter()
                .map(|(k, v)| (k.to_string(), (*v).into()))
                .collect()
        };
        serde_json::json!({
            "lines": p.lines,
            "page_events": p.events,
            "other_events": p.other,
            "comments": p.comments,
            "malformed": p.malformed,
            "first_malformed": p.first_malformed.iter()
                .map(|m| serde_json::json!({"line": m.line, "reason": m.reason}))
                .collect::<Vec<_>>(),
            "span_ns": self.span_ns.map(|(a, b)| [a, b]),
            "events_per_type": self.per_type,
            "failed_allocs": self.failed_allocs,
            "frees": self.frees,
            "batched_duplicates": self.batched_duplicates,
            "cross_cpu_frees": self.cross_cpu_frees,
            "frees_unseen": self.frees_unseen,
            "orders": map(&self.orders),
            "migratetypes": map(&self.migratetypes),
            "migratetype_names": self.migratetypes.keys()
                .map(|&m| (m.to_string(), self.numbering().name(m)))
                .collect::<BTreeMap<_, _>>(),
            "migratetype_numbering": match self.numbering() {
                Numbering::Current => "current",
                Numbering::Legacy => "legacy",
            },
            "migratetype_numbering_given": self.given_numbering.is_some(),
            "migratetype_evidence": {
                "current": self.evidence.current, "legacy": self.evidence.legacy
            },
            "gfp_flags": self.gfp,
            "cpus": self.cpus.iter()
                .map(|(c, k)| serde_json::json!({
                    "cpu": c, "events": k.events, "refills": k.refills, "drains": k.drains
                }))
                .collect::<Vec<_>>(),
            "most_reused": self.most_reused(TOP).iter()
                .map(|(pfn, n)| serde_json::json!({"pfn": pfn, "allocs": n}))
                .collect::<Vec<_>>(),
            "extfrag_fragmenting": self.extfrag_fragmenting,
            "extfrag_change_ownership": self.extfrag_change_ownership,
            "extfrag_fallbacks": self.extfrag_fallbacks.iter()
                .map(|((ao, fo, am, fm), n)| serde_json::json!({
                    "alloc_order": ao, "fallback_order": fo,
                    "alloc_migratetype": am, "fallback_migratetype": fm, "count": n
                }))
                .collect::<Vec<_>>(),
        })
    }

    /// The report as a text table.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let p = &self.parser;
        let _ = writeln!(s, "lines            {:>10}", p.lines);
        let _ = writeln!(s, "page events      {:>10}", p.events);
        let _ = writeln!(s, "other events     {:>10}", p.other);
        let _ = writeln!(s, "comments/blank   {:>10}", p.comments);
        let _ = writeln!(s, "malformed        {:>10}", p.malformed);
        for m in &p.first_malformed {
            let _ = writeln!(s, "  line {}: {}", m.line, m.reason);
        }
        if let Some((a, b)) = self.span_ns {
            let _ = writeln!(
                s,
                "time span        {:>10.6} s ({:.6} .. {:.6})",
                (b - a) as f64 / 1e9,
                a as f64 / 1e9,
                b as f64 / 1e9
            );
        }
        let _ = writeln!(s, "\nevents per type");
        for (name, n) in &self.per_type {
            let _ = writeln!(s, "  {name:<27}{n:>10}");
        }
        let _ = writeln!(s, "\nallocations");
        let _ = writeln!(s, "  failed                     {:>10}", self.failed_allocs);
        let _ = writeln!(s, "  frees (counted once)       {:>10}", self.frees);
        let _ = writeln!(
            s,
            "  batched duplicates         {:>10}",
            self.batched_duplicates
        );
        let _ = writeln!(
            s,
            "  frees on another CPU       {:>10}",
            self.cross_cpu_frees
        );
        let _ = writeln!(s, "  frees of unseen frames     {:>10}", self.frees_unseen);
        let _ = writeln!(s, "\norder  allocs");
        for (o, n) in &self.orders {
            let _ = writeln!(s, "  {o:>4}{n:>10}");
        }
        let numbering = self.numbering();
        let how = if self.given_numbering.is_some() {
            "given".to_owned()
        } else {
            format!(
                "inferred: {} allocations agree with current, {} with legacy",
                self.evidence.current, self.evidence.legacy
            )
        };
        let _ = writeln!(s, "\nmigratetype numbering: {numbering} ({how})");
        let _ = writeln!(s, "migratetype  name              allocs");
        for (&m, n) in &self.migratetypes {
            let _ = writeln!(s, "  {m:>10}  {:<14}{n:>10}", numbering.name(m));
        }
        let mut gfp: Vec<(&String, &u64)> = self.gfp.iter().collect();
        gfp.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let _ = writeln!(s, "\ngfp_flags (top {TOP})");
        for (g, n) in gfp.into_iter().take(TOP) {
            let _ = writeln!(s, "  {n:>10}  {g}");
        }
        let _ = writeln!(s, "\ncpu      events   refills    drains");
        for (c, k) in &self.cpus {
            let _ = writeln!(
                s,
                "  {c:>3}{:>10}{:>10}{:>10}",
                k.events, k.refills, k.drains
            );
        }
        let _ = writeln!(
            s,
            "\nmost reused frames (top {TOP})\n         pfn    allocs"
        );
        for (pfn, n) in self.most_reused(TOP) {
            let _ = writeln!(s, "  {:>#10x}{n:>10}", pfn);
        }
        if !self.extfrag_fallbacks.is_empty() {
            let _ = writeln!(
                s,
                "\nextfrag fallbacks: fragmenting {}, change_ownership {}",
                self.extfrag_fragmenting, self.extfrag_change_ownership
            );
            let _ = writeln!(
                s,
                "  alloc_order fallback_order alloc_mt fallback_mt     count"
            );
            for ((ao, fo, am, fm), n) in &self.extfrag_fallbacks {
                let _ = writeln!(s, "  {ao:>11} {fo:>14} {am:>8} {fm:>11}{n:>10}");
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/linux-6.1-ftrace-sample.txt"
    );

    /// Checked independently: `grep ' mm_page_alloc: ' | grep -o 'pfn=0x[0-9a-f]*' | sort |
    /// uniq -c | sort -k1,1nr -k2` and `grep percpu_refill=1 | grep -o '\[00[0-9]\]' | uniq -c`.
    #[test]
    fn sample_stats() {
        let s = TraceStats::read(super::super::parse::open(std::path::Path::new(SAMPLE)).unwrap())
            .unwrap();
        assert_eq!(
            s.most_reused(TOP),
            [
                (0x2df6, 8),
                (0x2e3b, 8),
                (0x2e67, 8),
                (0x2e41, 7),
                (0x2e50, 7)
            ]
        );
        let refills: Vec<(u32, u64)> = s.cpus.iter().map(|(&c, k)| (c, k.refills)).collect();
        assert_eq!(refills, [(1, 7), (2, 882), (3, 126)]);
        // Every mm_page_free_batched repeats an mm_page_free: 364 frees, not 658.
        assert_eq!((s.frees, s.batched_duplicates), (364, 294));
        assert_eq!(s.failed_allocs, 0);
        assert!(s.cpus.values().all(|k| k.drains == 0));
    }

    /// pfns that all share one bucket of an FxHash table (rustc-hash 2: the hash is
    /// `(pfn * K).rotate_left(26)`; the bucket is its low bits, the control byte its top
    /// seven): `pfn * K` equal to a small `j`. 100k such lines took 80 s of `trace stats`.
    fn fx_colliding_pfn(j: u64) -> u64 {
        const K: u64 = 0xf135_7aea_2e62_a9c5;
        // K's inverse modulo 2^64 (Newton's iteration, K odd).
        let mut inv: u64 = 1;
        for _ in 0..6 {
            inv = inv.wrapping_mul(2u64.wrapping_sub(K.wrapping_mul(inv)));
        }
        j.wrapping_mul(inv)
    }

    #[test]
    fn crafted_pfns_do_not_share_a_bucket() {
        use std::hash::BuildHasher as _;
        let pfns: Vec<u64> = (1..=4096).map(fx_colliding_pfn).collect();
        // They do collide under FxHash: one bucket of a 2^20-bucket table.
        let fx = rustc_hash::FxBuildHasher;
        assert!(pfns.iter().all(|&p| fx.hash_one(p) & 0xfffff == 0));
        // The map of allocations per pfn spreads them.
        let text: String = pfns
            .iter()
            .map(|p| format!("a-1 [000] 1.0: mm_page_alloc: page=p pfn={p:#x} order=0 migratetype=0 gfp_flags=GFP_KERNEL\n"))
            .collect();
        let s = TraceStats::read(text.as_bytes()).unwrap();
        assert_eq!(s.alloc_per_pfn.len(), 4096);
        let buckets: HashSet<u64> = pfns
            .iter()
            .map(|&p| s.alloc_per_pfn.hasher().hash_one(p) & 0xfff)
            .collect();
        assert!(buckets.len() > 2048, "{} buckets of 4096", buckets.len());
        // And the seed differs between maps: a file cannot learn one from another run.
        let other = TraceStats::default();
        assert!(pfns
            .iter()
            .any(|&p| other.alloc_per_pfn.hasher().hash_one(p)
                != s.alloc_per_pfn.hasher().hash_one(p)));
    }

    #[test]
    fn a_file_that_is_no_trace_is_an_error() {
        for text in ["", "# only a comment\n", "garbage\nmore garbage\n"] {
            let e = TraceStats::read(text.as_bytes()).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{text:?}");
        }
    }

    #[test]
    fn batched_free_counted_once_and_cross_cpu() {
        let text = "a-1 [000] 1.0: mm_page_alloc: page=p pfn=0x10 order=0 migratetype=1 gfp_flags=GFP_USER\n\
                    b-2 [001] 1.1: mm_page_free: page=p pfn=0x10 order=0\n\
                    b-2 [001] 1.2: mm_page_free_batched: page=p pfn=0x10 order=0\n\
                    b-2 [001] 1.3: mm_page_free_batched: page=p pfn=0x20 order=0\n\
                    b-2 [001] 1.4: mm_page_pcpu_drain: page=p pfn=0x20 order=0 migratetype=1\n";
        let s = TraceStats::read(text.as_bytes()).unwrap();
        assert_eq!((s.frees, s.batched_duplicates), (2, 1));
        assert_eq!((s.cross_cpu_frees, s.frees_unseen), (1, 1));
        assert_eq!(s.cpus[&1].drains, 1);
    }
}
