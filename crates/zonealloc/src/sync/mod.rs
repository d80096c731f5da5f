//! The only module that names a lock or an atomic type.
//!
//! Three builds share one vocabulary:
//! - `cfg(loom)`: loom's model-checked atomics and mutex, for the concurrency tests;
//! - otherwise: core atomics and `lock_api` locks: [`RawSpinLock`] (the kernel's
//!   `spinlock_t`: one compare-and-swap to lock and a plain release store to unlock; waiters
//!   spin briefly, then under `std` yield the thread, so a holder preempted by the scheduler
//!   is not starved) for the PCP locks, and the platform's raw mutex for the zone lock.
//!
//! The `std` answers to "which CPU" (`current_cpu`) and "what time" (`now_ns`) live here; the
//! [`platform`](crate::platform) layer hands them, or the embedder's own, to the zone.
//!
//! By concern: [`lock`] (the locks), [`clock`] (which CPU, which thread, what time; `cpu`
//! answers "which CPU" under `std`), [`storage`] (tables and slots: heap, mapped, borrowed or
//! caller-provided `'static` memory).
//!
//! Per-frame metadata uses atomics with `Relaxed` ordering only: each frame's fields are
//! guarded by whichever lock owns the list the frame is on, and that lock's acquire/release
//! orders the accesses. The atomics make the *sharing* of one table between locks sound.

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU16, AtomicU32, AtomicU64, AtomicU8};

/// `core`'s `AtomicU32` in every build, loom's included: for words that a lock already
/// orders on every access (the deferred-init bitmap, read and written under the zone lock),
/// which loom would only model as states that cannot happen, and which are allocated as
/// zeroed memory (loom's atomics cannot be).
pub(crate) use core::sync::atomic::AtomicU32 as LockedU32;
pub(crate) use core::sync::atomic::Ordering;

mod clock;
#[cfg(all(feature = "std", not(loom)))]
#[allow(unsafe_code)]
mod cpu;
mod lock;
mod storage;

pub(crate) use clock::thread_token;
#[cfg(feature = "std")]
pub(crate) use clock::{current_cpu, current_cpu_index, now_ns};
pub use lock::RawSpinLock;
pub(crate) use lock::{relax_hard, Lock, LockGuard, SpinGuard, SpinLock};
pub use storage::StaticStorage;
#[cfg(all(feature = "std", not(loom)))]
pub(crate) use storage::Zeroable;
pub(crate) use storage::{init_prefix, init_slice, StaticSlice};
