//! Transparent zstd input: every frame of a file, as `zstd` and `zstdcat` read it.
//!
//! `ruzstd`'s [`StreamingDecoder`] decodes one frame; `zstd -c a b > c`, `pzstd` and log
//! rotation produce files of several frames, and `pzstd` writes skippable frames between them.
//! [`MultiFrame`] starts a new frame whenever one ends and skips skippable frames
//! (RFC 8878 §3.1.2: magic `0x184D2A5?`, then a little-endian 32-bit length).
//!
//! # Memory
//! A zstd decoder keeps the frame's window of history, and the frame header says how large it
//! is: up to 3.75 TiB. `ruzstd` refuses windows above 100 MiB on every frame but the first, so
//! [`MultiFrame`] reads each frame header itself and refuses a window above
//! [`MAX_WINDOW_BYTES`] before the decoder sees it.

use std::io::{self, BufRead, Chain, Cursor, Read};

use ruzstd::decoding::{FrameDecoder, StreamingDecoder};

/// The magic number at the start of a zstd frame, as the bytes on disk.
pub const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The largest window a frame may ask for: `ruzstd`'s own limit (it checks it on every frame
/// but the first). `zstd` writes windows of 8 MiB at `-19`, 128 MiB only with `--long`.
pub const MAX_WINDOW_BYTES: u64 = 100 << 20;

/// Reads a frame header (RFC 8878 §3.1.1.1) off `source` and checks its window: the header's
/// bytes, to be decoded again by `ruzstd`.
fn frame_header(source: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut header = vec![0u8; 5];
    source.read_exact(&mut header)?;
    let fhd = header[4];
    let single_segment = fhd & 0x20 != 0;
    let dict_id_bytes = [0, 1, 2, 4][usize::from(fhd & 0x3)];
    let fcs_bytes = match (fhd >> 6, single_segment) {
        (0, false) => 0,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let rest = usize::from(!single_segment) + dict_id_bytes + fcs_bytes;
    header.resize(5 + rest, 0);
    source.read_exact(&mut header[5..])?;
    let window = if single_segment {
        // The window is the whole content (RFC 8878 §3.1.1.1.2); 2-byte sizes are offset.
        let fcs = &header[5 + dict_id_bytes..];
        let mut le = [0u8; 8];
        le[..fcs.len()].copy_from_slice(fcs);
        u64::from_le_bytes(le) + if fcs_bytes == 2 { 256 } else { 0 }
    } else {
        // Window_Descriptor: exponent (5 bits) and mantissa (3 bits), §3.1.1.1.2.
        let wd = header[5];
        let base = 1u64 << (10 + (wd >> 3));
        base + base / 8 * u64::from(wd & 0x7)
    };
    if window > MAX_WINDOW_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "zstd: a frame's window of {} MiB is more than the {} MiB this reader keeps",
                window >> 20,
                MAX_WINDOW_BYTES >> 20
            ),
        ));
    }
    Ok(header)
}

/// The source of an open frame: its header (read and checked), then the rest.
type FrameSource<R> = Chain<Cursor<Vec<u8>>, R>;

/// Whether `head` starts a skippable frame (magic `0x184D2A50..=0x184D2A5F`, little-endian).
fn is_skippable(head: &[u8]) -> bool {
    head.len() >= 4 && head[1..4] == [0x2a, 0x4d, 0x18] && head[0] & 0xf0 == 0x50
}

/// Whether a file starting with `head` is zstd: a zstd frame or a skippable frame (`pzstd`
/// starts with one).
pub fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&MAGIC) || is_skippable(head)
}

/// Reads the concatenation of every zstd frame in `R`.
pub struct MultiFrame<R: BufRead> {
    /// The frame being read; `None` between frames and at the end.
    frame: Option<StreamingDecoder<FrameSource<R>, FrameDecoder>>,
    /// The source between frames (and a decoder to reuse), `None` while a frame is open.
    idle: Option<(R, FrameDecoder)>,
}

impl<R: BufRead> MultiFrame<R> {
    /// Wraps `source`, which must start with a zstd or skippable frame.
    pub fn new(source: R) -> Self {
        Self {
            frame: None,
            idle: Some((source, FrameDecoder::new())),
        }
    }

    /// Opens the next frame, skipping skippable ones. `Ok(false)` at the end of the input.
    fn next_frame(&mut self) -> io::Result<bool> {
        let Some((mut source, decoder)) = self.idle.take() else {
            return Ok(false);
        };
        loop {
            if source.fill_buf()?.is_empty() {
                self.idle = Some((source, decoder));
                return Ok(false);
            }
            let head = source.fill_buf()?;
            if is_skippable(head) {
                let mut header = [0u8; 8];
                source.read_exact(&mut header)?;
                let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
                let skipped = io::copy(&mut (&mut source).take(u64::from(len)), &mut io::sink())?;
                if skipped != u64::from(len) {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "zstd: truncated skippable frame",
                    ));
                }
                continue;
            }
            let header = frame_header(&mut source)?;
            let frame =
                StreamingDecoder::new_with_decoder(Cursor::new(header).chain(source), decoder)
                    .map_err(|e| {
                        io::Error::new(io::ErrorKind::InvalidData, format!("zstd: {e}"))
                    })?;
            self.frame = Some(frame);
            return Ok(true);
        }
    }
}

impl<R: BufRead> Read for MultiFrame<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(frame) = &mut self.frame {
                let n = frame.read(buf)?;
                if n > 0 {
                    return Ok(n);
                }
                let frame = self.frame.take().expect("checked above");
                let (source, decoder) = frame.into_parts();
                self.idle = Some((source.into_inner().1, decoder));
            }
            if !self.next_frame()? {
                return Ok(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ruzstd::encoding::{compress_to_vec, CompressionLevel};

    fn zst(data: &[u8]) -> Vec<u8> {
        compress_to_vec(data, CompressionLevel::Fastest)
    }

    fn read_all(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        MultiFrame::new(bytes).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn one_frame() {
        let text = b"mm_page_alloc: page=0x1 pfn=0x10 order=0\n".repeat(500);
        assert!(is_zstd(&zst(&text)));
        assert!(!is_zstd(&text));
        assert_eq!(read_all(&zst(&text)).unwrap(), text);
    }

    #[test]
    fn frames_and_skippable_frames_concatenate() {
        // pzstd's layout: a skippable frame before each zstd frame.
        let mut file = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        file.extend(zst(b"first\n"));
        file.extend_from_slice(&[0x5f, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9]);
        file.extend(zst(b"second\n"));
        assert!(is_zstd(&file));
        assert_eq!(read_all(&file).unwrap(), b"first\nsecond\n");
    }

    #[test]
    fn garbage_and_truncation_are_errors_not_panics() {
        let whole = zst(&b"line\n".repeat(1000));
        for cut in [5, whole.len() / 2, whole.len() - 1] {
            // A truncated frame may still yield a prefix; it must never panic.
            let _ = read_all(&whole[..cut]);
        }
        let mut bad = MAGIC.to_vec();
        bad.extend_from_slice(&[0xff; 16]);
        assert!(read_all(&bad).is_err());
        assert!(read_all(&[0x50, 0x2a, 0x4d, 0x18, 200, 0, 0, 0, 1]).is_err());
    }

    #[test]
    fn a_frame_asking_for_a_huge_window_is_refused() {
        // Frame header: no single segment, window descriptor 0xa0 (2^30 bytes), then an empty
        // last raw block. ruzstd keeps up to a window of output (and checks the size only from
        // the second frame on).
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&[0x00, 0xa0, 0x01, 0x00, 0x00]);
        let err = read_all(&file).unwrap_err();
        assert!(err.to_string().contains("window of 1024 MiB"), "{err}");
        // The same frame with a 1 MiB window (descriptor 0x50) is fine, twice.
        file[5] = 0x50;
        assert_eq!(read_all(&file).unwrap(), b"");
        assert_eq!(read_all(&file.repeat(2)).unwrap(), b"");
        // A single-segment frame: the window is its content size (8-byte field, 2^40 here).
        let mut file = MAGIC.to_vec();
        file.extend_from_slice(&[0xe0, 0, 0, 0, 0, 0, 1, 0, 0, 0x01, 0x00, 0x00]);
        let err = read_all(&file).unwrap_err();
        assert!(err.to_string().contains("window of 1048576 MiB"), "{err}");
    }
}
