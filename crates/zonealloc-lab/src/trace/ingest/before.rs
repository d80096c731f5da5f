//! The text before a window's start marker, kept for the inferences that need the kernel's
//! state at the marker ([`crate::trace::replay::infer::free_factor`]: 6.1's `free_factor`
//! is set by drains and allocations no snapshot prints). The window cuts it out of the
//! stream; it is kept as it goes by (at most [`BEFORE_BYTES`], the last ones) and parsed
//! once, after the marker, by whoever asks.

use std::sync::{Arc, Mutex};

/// The most of the text before the marker that is kept: its last 32 MiB (some 200 000 lines
/// of ftrace text; a capture's snapshot reads take some 5 MiB).
pub const BEFORE_BYTES: usize = 32 << 20;

/// The text before a window's start, shared by the stream that cuts it and the reader.
#[derive(Clone, Debug, Default)]
pub struct BeforeWindow(Arc<Mutex<Kept>>);

#[derive(Debug, Default)]
struct Kept {
    bytes: Vec<u8>,
    /// The front was dropped ([`BEFORE_BYTES`]): the first line may be cut.
    trimmed: bool,
    /// Nobody will ask: nothing is kept.
    off: bool,
}

impl BeforeWindow {
    /// Keeps `bytes`, which follow those kept before, dropping the oldest beyond
    /// [`BEFORE_BYTES`].
    pub fn push(&self, bytes: &[u8]) {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if k.off {
            return;
        }
        k.bytes.extend_from_slice(bytes);
        // Dropped in halves, not per push: each byte is moved at most once or twice.
        if k.bytes.len() > 2 * BEFORE_BYTES {
            let cut = k.bytes.len() - BEFORE_BYTES;
            k.bytes.drain(..cut);
            k.trimmed = true;
        }
    }

    /// Keeps nothing from now on, and drops what was kept (for a replay that will not ask).
    pub fn stop(&self) {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner());
        k.off = true;
        k.bytes = Vec::new();
    }

    /// The text kept, from its first whole line, handed over (the kept text is emptied).
    pub fn take(&self) -> Vec<u8> {
        let mut k = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut bytes = std::mem::take(&mut k.bytes);
        if std::mem::take(&mut k.trimmed) {
            let first = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |nl| nl + 1);
            bytes.drain(..first);
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_was_pushed_in_order() {
        let b = BeforeWindow::default();
        b.push(b"one\ntw");
        b.push(b"o\n");
        assert_eq!(b.take(), b"one\ntwo\n");
        assert!(b.take().is_empty(), "taken once");
        b.push(b"three\n");
        b.stop();
        b.push(b"four\n");
        assert!(b.take().is_empty(), "stopped");
    }

    #[test]
    fn a_trimmed_front_starts_at_a_whole_line() {
        let b = BeforeWindow::default();
        let line = b"0123456789abcde\n";
        let lines = 2 * BEFORE_BYTES / line.len() + 2;
        b.push(b"x");
        for _ in 0..lines {
            b.push(line);
        }
        let t = b.take();
        assert!(t.len() <= 2 * BEFORE_BYTES && t.len() >= BEFORE_BYTES - line.len());
        assert!(t.starts_with(line) && t.len() % line.len() == 0);
    }
}
