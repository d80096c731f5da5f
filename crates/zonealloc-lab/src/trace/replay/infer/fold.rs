//! Folding a CPU or zone number below the model's count, without a division where it is
//! below already.

/// `i` folded below `n` (`i % n`), with no division where it is below already, as it is
/// for every CPU and zone of a trace from the machine the replay models: the walks fold
/// each event's CPU and zone several times, and a division is their costliest step.
#[inline(always)]
pub(crate) fn fold<T>(i: T, n: T) -> T
where
    T: Copy + PartialOrd + std::ops::Rem<Output = T>,
{
    if i < n {
        i
    } else {
        i % n
    }
}

#[cfg(test)]
mod tests {
    /// `fold` is `%`: below `n` as it was, at or above folded, for CPUs and zones alike.
    #[test]
    fn fold_is_remainder() {
        for n in 1u32..6 {
            for i in 0..20 {
                assert_eq!(super::fold(i, n), i % n);
            }
        }
        assert_eq!(super::fold(7usize, 3), 1);
    }
}
