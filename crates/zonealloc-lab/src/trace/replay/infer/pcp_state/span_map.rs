//! A small value per key of a zone's span (a pfn, or a pageblock number), for the list
//! inference's per-frame facts: an array over the span where it is at most [`DENSE_KEYS`]
//! keys, a hash map for a larger span and for keys outside it. The array's lookup is an index
//! where the map's was a hash and a probe, and the inference looks keys up on most events
//! (7.2 p2 `--proc`: 15 M of the 94 M instructions the inference took, callgrind). The array
//! is zeroed as it is allocated, so the pages of it the head never touches take no memory.

use std::ops::Range;

use crate::trace::stats::HashMap;

/// Keys a [`SpanMap`] keeps in an array at most: 64 Mi, a zone of 256 GiB by pfn.
const DENSE_KEYS: u64 = 1 << 26;

/// A value per key, the zero value standing for none: the caller encodes its values so that
/// none is zero ([`SpanMap::insert`]).
#[derive(Clone, Debug)]
pub(super) struct SpanMap<T> {
    start: u64,
    dense: Vec<T>,
    sparse: HashMap<u64, T>,
}

impl<T: Copy + Default + PartialEq> SpanMap<T> {
    /// No key yet; an array for the keys of `span` where it is small enough.
    pub(super) fn new(span: Range<u64>) -> SpanMap<T> {
        let n = span.end.saturating_sub(span.start);
        SpanMap {
            start: span.start,
            dense: vec![T::default(); if n <= DENSE_KEYS { n as usize } else { 0 }],
            sparse: HashMap::default(),
        }
    }

    /// Where `key` lies in the array, if it does.
    #[inline(always)]
    fn index(&self, key: u64) -> Option<usize> {
        let i = key.wrapping_sub(self.start);
        (i < self.dense.len() as u64).then_some(i as usize)
    }

    /// The value of `key`, if it has one.
    #[inline(always)]
    pub(super) fn get(&self, key: u64) -> Option<T> {
        match self.index(key) {
            Some(i) => Some(self.dense[i]).filter(|v| *v != T::default()),
            None => self.sparse.get(&key).copied(),
        }
    }

    /// Sets `key`'s value to `v`, which is not zero.
    #[inline(always)]
    pub(super) fn insert(&mut self, key: u64, v: T) {
        debug_assert!(v != T::default());
        match self.index(key) {
            Some(i) => self.dense[i] = v,
            None => {
                self.sparse.insert(key, v);
            }
        }
    }

    /// Takes `key`'s value, leaving none.
    #[inline(always)]
    pub(super) fn remove(&mut self, key: u64) -> Option<T> {
        match self.index(key) {
            Some(i) => Some(std::mem::take(&mut self.dense[i])).filter(|v| *v != T::default()),
            None => self.sparse.remove(&key),
        }
    }

    /// Every key with a value, with it: the array's in key order, then the map's.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, T)> + '_ {
        let start = self.start;
        (self.dense.iter().enumerate())
            .filter(|(_, v)| **v != T::default())
            .map(move |(i, &v)| (start + i as u64, v))
            .chain(self.sparse.iter().map(|(&k, &v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Whatever the operations, inside the span, at its edges and far outside, the map
        /// answers as a hash map does.
        #[test]
        fn it_answers_as_a_hash_map_does(
            ops in proptest::collection::vec((0u8..3, 0u64..64, 1u8..=255), 0..300),
            far in proptest::bool::ANY,
        ) {
            let mut m = SpanMap::<u8>::new(16..40);
            let mut want = std::collections::HashMap::new();
            for (op, k, v) in ops {
                let k = if far && k > 60 { u64::MAX - k } else { k };
                match op {
                    0 => {
                        m.insert(k, v);
                        want.insert(k, v);
                    }
                    1 => proptest::prop_assert_eq!(m.remove(k), want.remove(&k)),
                    _ => proptest::prop_assert_eq!(m.get(k), want.get(&k).copied()),
                }
            }
            let mut got: Vec<_> = m.iter().collect();
            got.sort_unstable();
            let mut all: Vec<_> = want.into_iter().collect();
            all.sort_unstable();
            proptest::prop_assert_eq!(got, all);
        }
    }

    #[test]
    fn a_span_too_large_for_an_array_takes_none() {
        let mut m = SpanMap::<u8>::new(0..u64::MAX);
        assert!(m.dense.is_empty());
        m.insert(7, 1);
        assert_eq!((m.get(7), m.remove(7), m.get(7)), (Some(1), Some(1), None));
    }
}
