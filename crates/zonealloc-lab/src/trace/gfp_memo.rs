//! A memo of values read from `gfp_flags` strings, for the readers of a trace that weigh them
//! per allocation: the prefix's look (numbering evidence) and the replay (requests).

/// A value read from a `gfp_flags` string, remembered for the strings seen: a trace repeats a
/// few dozen of them, and consecutive allocations mostly share one, so the string is compared
/// with the last one (and then the others) instead of being split and matched again. Each
/// string is compared by its `Key` first, and in full only where the keys match.
pub struct GfpMemo<V> {
    seen: Vec<(Key, Box<str>, V)>,
    last: usize,
}

impl<V> Default for GfpMemo<V> {
    fn default() -> Self {
        GfpMemo {
            seen: Vec::new(),
            last: 0,
        }
    }
}

/// A string's length and a word made of its first and last eight bytes: equal strings have
/// equal keys, and `gfp_flags` strings of one trace seldom share one (they differ in length,
/// or in their first or last flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Key(usize, u64);

impl Key {
    #[inline]
    pub(crate) fn of(s: &str) -> Key {
        let b = s.as_bytes();
        let word = match (b.first_chunk::<8>(), b.last_chunk::<8>()) {
            (Some(head), Some(tail)) => {
                u64::from_le_bytes(*head) ^ u64::from_le_bytes(*tail).rotate_left(32)
            }
            _ => b.iter().fold(0, |w, &c| w << 8 | u64::from(c)),
        };
        Key(b.len(), word)
    }
}

impl<V: Copy> GfpMemo<V> {
    /// The most strings kept; a trace with more (hex flags from many kernels, or hostile
    /// input) reads the others each time.
    pub const MAX: usize = 256;

    /// `read(gfp)`, remembered where `gfp` was seen before (`read` must be a function of the
    /// string alone, the same at every call).
    #[inline]
    pub fn get(&mut self, gfp: &str, read: impl FnOnce(&str) -> V) -> V {
        let key = Key::of(gfp);
        match self.seen.get(self.last) {
            Some((k, s, v)) if *k == key && **s == *gfp => *v,
            _ => self.lookup(key, gfp, read),
        }
    }

    /// Strings kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }

    fn lookup(&mut self, key: Key, gfp: &str, read: impl FnOnce(&str) -> V) -> V {
        if let Some(i) = self
            .seen
            .iter()
            .position(|(k, s, _)| *k == key && **s == *gfp)
        {
            self.last = i;
            return self.seen[i].2;
        }
        let v = read(gfp);
        if self.seen.len() < Self::MAX {
            self.last = self.seen.len();
            self.seen.push((key, gfp.into(), v));
        }
        v
    }
}
