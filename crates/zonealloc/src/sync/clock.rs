//! Which CPU, which thread, what time: [`current_cpu`] (`smp_processor_id`; the rseq answer
//! of `cpu` under `std`, CPU 0 under loom), [`thread_token`] and [`now_ns`].

/// The CPU the calling thread runs on (`smp_processor_id`): see [`cpu`].
#[cfg(all(feature = "std", not(loom)))]
pub(crate) use super::cpu::{current_cpu, current_cpu_index};

/// Under loom there is no way to ask: CPU 0, unless the caller says. (Without `std` the
/// platform answers: `platform::SingleCpu` or the embedder's.)
#[cfg(all(feature = "std", loom))]
pub(crate) fn current_cpu() -> u32 {
    0
}

/// [`current_cpu`] as an index.
#[cfg(all(feature = "std", loom))]
pub(crate) fn current_cpu_index() -> usize {
    0
}

/// A number unique to the calling thread (from 1), or 0 where threads cannot be told apart
/// (`no_std`, loom). Lets a drain recognise the CPU its own thread owns.
#[cfg(all(feature = "std", not(loom)))]
pub(crate) fn thread_token() -> u64 {
    static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
    std::thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// A number unique to the calling thread, or 0 where threads cannot be told apart.
#[cfg(any(not(feature = "std"), loom))]
pub(crate) fn thread_token() -> u64 {
    0
}

/// Monotonic nanoseconds for the optional zone-lock hold-time histograms (0 under loom).
#[cfg(feature = "std")]
#[inline]
pub(crate) fn now_ns() -> u64 {
    #[cfg(all(feature = "std", not(loom)))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
    #[cfg(loom)]
    {
        0
    }
}
