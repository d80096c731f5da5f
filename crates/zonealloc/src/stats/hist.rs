//! A small log-linear histogram for latencies (zone-lock hold times): 16 sub-buckets per power
//! of two, so any quantile is within 1/16 (6.25%) of the true value; the sum, count and maximum
//! are exact. Fixed size, no allocation, `no_std`.

/// Sub-buckets per power of two.
const SUB: u32 = 16;
const SUB_BITS: u32 = 4;
/// Values up to 2^44 ns (~4.9 hours) are bucketed; larger ones land in the last bucket.
const GROUPS: usize = 41;
const BUCKETS: usize = GROUPS * SUB as usize;

/// Histogram of nanosecond durations.
#[derive(Clone, PartialEq, Eq)]
pub struct Histogram {
    counts: [u32; BUCKETS],
    count: u64,
    sum: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: [0; BUCKETS],
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

impl core::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("avg_ns", &self.mean())
            .field("p99_ns", &self.quantile(0.99))
            .field("max_ns", &self.max)
            .finish()
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let msb = 63 - v.leading_zeros(); // >= SUB_BITS
    let group = (msb - SUB_BITS + 1) as usize;
    let sub = ((v >> (msb - SUB_BITS)) & (SUB as u64 - 1)) as usize;
    (group * SUB as usize + sub).min(BUCKETS - 1)
}

/// The smallest value of bucket `b` and the bucket's width.
fn bucket_range(b: usize) -> (u64, u64) {
    let group = b / SUB as usize;
    let sub = (b % SUB as usize) as u64;
    if group == 0 {
        return (sub, 1);
    }
    let shift = group as u32 - 1;
    (((SUB as u64) + sub) << shift, 1u64 << shift)
}

impl Histogram {
    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: u64) {
        let b = bucket_of(v);
        self.counts[b] = self.counts[b].saturating_add(1);
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Exact mean, 0 when empty.
    pub fn mean(&self) -> u64 {
        self.sum.checked_div(self.count).unwrap_or(0)
    }

    /// Exact maximum.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value below which a fraction `q` of the values lie (bucket midpoint, capped at the
    /// maximum); 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let exact = q.clamp(0.0, 1.0) * self.count as f64;
        let floor = exact as u64; // no float ceil in core
        let rank = if (floor as f64) < exact {
            floor + 1
        } else {
            floor
        }
        .max(1);
        let mut seen = 0u64;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                let (lo, w) = bucket_range(b);
                return (lo + w / 2).min(self.max);
            }
        }
        self.max
    }

    /// Adds another histogram's values.
    pub fn merge(&mut self, o: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(o.counts.iter()) {
            *a = a.saturating_add(*b);
        }
        self.count += o.count;
        self.sum = self.sum.saturating_add(o.sum);
        self.max = self.max.max(o.max);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_values_contiguously() {
        let mut prev_end = 0;
        for b in 0..200 {
            let (lo, w) = bucket_range(b);
            assert_eq!(lo, prev_end, "bucket {b}");
            prev_end = lo + w;
            assert_eq!(bucket_of(lo), b);
            assert_eq!(bucket_of(lo + w - 1), b);
        }
    }

    #[test]
    fn quantiles_are_within_a_sixteenth() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        assert_eq!(h.mean(), 5000);
        assert_eq!(h.max(), 10_000);
        let p99 = h.quantile(0.99) as f64;
        assert!((p99 - 9900.0).abs() / 9900.0 < 0.0625, "{p99}");
        let p50 = h.quantile(0.5) as f64;
        assert!((p50 - 5000.0).abs() / 5000.0 < 0.0625, "{p50}");
    }

    #[test]
    fn empty_histogram_reports_zero() {
        let h = Histogram::default();
        assert_eq!((h.mean(), h.quantile(0.99), h.max()), (0, 0, 0));
    }
}
