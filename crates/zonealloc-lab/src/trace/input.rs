//! Where a trace's bytes come from: a file or standard input, plain or compressed.
//!
//! [`open`] takes a path (`-` is standard input); [`decode`] takes any [`Read`] (a pipe, a
//! socket, a file already open) and gives a [`BufRead`] of the trace's text, decompressing
//! gzip, zstd or xz when the first bytes say so (magic numbers, not file names: `<(zcat ...)`,
//! FIFOs and standard input have none). The text then goes to
//! [`Parser::read_all`](super::parse::Parser::read_all), which bounds each line.
//!
//! # Memory
//! Nothing here holds more than a bounded buffer, whatever the input: a [`BufReader`] of
//! [`BUF_BYTES`] on each side of the decoder, and the decoder's own window: 32 KiB for gzip, the
//! frame's window for zstd (`ruzstd` refuses windows above 100 MiB), and at most
//! [`XZ_MEMLIMIT_BYTES`] for xz (liblzma's memory limit; `xz -9` needs 65 MiB). A decompression
//! bomb therefore costs time, not memory: the parser sees its output one buffer at a time.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// The size of the read buffers (source and decoded text).
pub const BUF_BYTES: usize = 1 << 16;

/// The most memory the xz decoder may use (its dictionary and state); a file that needs more is
/// an error. `xz -9` and `xz -9e` need 65 MiB to decompress; the kernel traces need 9 MiB.
pub const XZ_MEMLIMIT_BYTES: u64 = 128 << 20;

/// The gzip member header (RFC 1952 §2.3.1: ID1 ID2).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// The xz stream header magic (xz file format §2.1.1.1).
const XZ_MAGIC: [u8; 6] = [0xfd, b'7', b'z', b'X', b'Z', 0x00];
/// The longest magic looked at.
const SNIFF_BYTES: usize = XZ_MAGIC.len();

/// The encoding of a trace, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip, one member or several (`cat a.gz b.gz`).
    Gzip,
    /// zstd, one frame or several, skippable frames skipped.
    Zstd,
    /// xz, one stream or several.
    Xz,
}

impl Compression {
    /// The encoding a file starting with `head` has (plain text unless a magic matches).
    pub fn sniff(head: &[u8]) -> Self {
        if head.starts_with(&GZIP_MAGIC) {
            Self::Gzip
        } else if super::zstd::is_zstd(head) {
            Self::Zstd
        } else if head.starts_with(&XZ_MAGIC) {
            Self::Xz
        } else {
            Self::None
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::None => "text",
            Self::Gzip => "gzip",
            Self::Zstd => "zstd",
            Self::Xz => "xz",
        }
    }
}

/// Opens the trace at `path` (`-`: standard input) and decodes it as [`decode`] does.
pub fn open(path: &Path) -> io::Result<Box<dyn BufRead>> {
    if path.as_os_str() == "-" {
        decode(io::stdin().lock())
    } else {
        decode(File::open(path)?)
    }
}

/// Reads `src` into `buf` until `buf` is full or `src` ends (retrying interrupted reads): the
/// bytes read, and the error that stopped it early if one did.
pub(crate) fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut len = 0;
    while len < buf.len() {
        match src.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (len, Some(e)),
        }
    }
    (len, None)
}

/// The text of the trace `source` holds: `source` itself, or its decompression when its first
/// bytes are a gzip, zstd or xz magic. Reads at most a few bytes before returning (to sniff),
/// so it works on pipes and standard input, and reads `source` only once.
pub fn decode<'a, R: Read + 'a>(mut source: R) -> io::Result<Box<dyn BufRead + 'a>> {
    // A pipe may hand the magic over in pieces: read until it is whole (or the input ends).
    let mut head = [0u8; SNIFF_BYTES];
    let got = match read_full(&mut source, &mut head) {
        (_, Some(e)) => return Err(e),
        (got, None) => got,
    };
    let kind = Compression::sniff(&head[..got]);
    let raw = BufReader::with_capacity(
        BUF_BYTES,
        io::Cursor::new(head).take(got as u64).chain(source),
    );
    Ok(match kind {
        Compression::None => Box::new(raw),
        Compression::Gzip => text(kind, flate2::bufread::MultiGzDecoder::new(raw)),
        Compression::Zstd => text(kind, super::zstd::MultiFrame::new(raw)),
        Compression::Xz => {
            let stream = liblzma::stream::Stream::new_stream_decoder(
                XZ_MEMLIMIT_BYTES,
                liblzma::stream::CONCATENATED,
            )
            .map_err(|e| io::Error::other(format!("xz: {e}")))?;
            text(kind, liblzma::bufread::XzDecoder::new_stream(raw, stream))
        }
    })
}

/// A decoder's output, buffered, its errors naming the format.
fn text<'a, R: Read + 'a>(kind: Compression, decoder: R) -> Box<dyn BufRead + 'a> {
    Box::new(BufReader::with_capacity(
        BUF_BYTES,
        Named {
            kind,
            inner: decoder,
        },
    ))
}

/// A decoder whose errors say which format failed (`xz: memory usage limit reached`).
struct Named<R> {
    kind: Compression,
    inner: R,
}

impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), NamedError(self.kind, e)))
    }
}

#[derive(Debug)]
struct NamedError(Compression, io::Error);

impl fmt::Display for NamedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lzma = self
            .1
            .get_ref()
            .and_then(|e| e.downcast_ref::<liblzma::stream::Error>());
        if lzma == Some(&liblzma::stream::Error::MemLimit) {
            return write!(
                f,
                "xz input: decompressing it needs more than {} MiB (its dictionary size)",
                XZ_MEMLIMIT_BYTES >> 20
            );
        }
        write!(f, "{} input: {}", self.0.name(), self.1)
    }
}

impl std::error::Error for NamedError {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    const TEXT: &[u8] = b"a-1 [000] 1.0: mm_page_free: page=p pfn=0x10 order=0\n";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(data).unwrap();
        gz.finish().unwrap()
    }

    fn xz(data: &[u8], level: u32) -> Vec<u8> {
        let mut w = liblzma::write::XzEncoder::new(Vec::new(), level);
        w.write_all(data).unwrap();
        w.finish().unwrap()
    }

    fn all(r: impl Read) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        decode(r)?.read_to_end(&mut out)?;
        Ok(out)
    }

    /// A reader that hands out one byte per call, as a slow pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(out)) => {
                    *out = *b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn each_format_is_recognised_by_its_magic() {
        assert_eq!(Compression::sniff(TEXT), Compression::None);
        assert_eq!(Compression::sniff(&gzip(TEXT)), Compression::Gzip);
        assert_eq!(Compression::sniff(&xz(TEXT, 0)), Compression::Xz);
        let zst =
            ruzstd::encoding::compress_to_vec(TEXT, ruzstd::encoding::CompressionLevel::Fastest);
        assert_eq!(Compression::sniff(&zst), Compression::Zstd);
        for bytes in [TEXT.to_vec(), gzip(TEXT), xz(TEXT, 6), zst] {
            assert_eq!(all(&bytes[..]).unwrap(), TEXT);
            // The magic arriving a byte at a time is still recognised.
            assert_eq!(all(Trickle(&bytes)).unwrap(), TEXT);
        }
    }

    #[test]
    fn short_and_empty_inputs_are_plain_text() {
        assert_eq!(all(&b""[..]).unwrap(), b"");
        assert_eq!(all(&[0x1fu8][..]).unwrap(), [0x1f]);
        assert_eq!(all(&b"\xfd7z"[..]).unwrap(), b"\xfd7z");
    }

    #[test]
    fn concatenated_xz_streams_are_one_text() {
        let mut file = xz(b"first\n", 1);
        file.extend(xz(b"second\n", 9));
        assert_eq!(all(&file[..]).unwrap(), b"first\nsecond\n");
    }

    #[test]
    fn corrupt_xz_is_an_error_naming_the_format() {
        let mut file = xz(&TEXT.repeat(100), 6);
        let mid = file.len() / 2;
        file[mid] ^= 0xff;
        let err = all(&file[..]).unwrap_err();
        assert!(err.to_string().starts_with("xz input: "), "{err}");
        let err = all(&file[..mid]).unwrap_err();
        assert!(err.to_string().starts_with("xz input: "), "{err}");
    }

    #[test]
    fn an_xz_file_needing_more_than_the_memory_limit_is_refused() {
        // An xz file whose LZMA2 dictionary is 1.5 GiB: the block header's one property byte
        // (xz format §5.3.1: dictionary (2 | (b & 1)) << (b / 2 + 11)) rewritten to 37 and the
        // header's CRC32 fixed. liblzma would allocate the dictionary when the block starts.
        let mut file = xz(TEXT, 0);
        let header = 12; // the stream header
        let size = (usize::from(file[header]) + 1) * 4;
        let flags = file[header + 1];
        assert_eq!(flags & 0xc0, 0, "no sizes in the block header");
        // One filter: id 0x21 (LZMA2), one property byte.
        assert_eq!(&file[header + 2..header + 4], &[0x21, 0x01]);
        file[header + 4] = 37;
        let mut crc = flate2::Crc::new();
        crc.update(&file[header..header + size - 4]);
        file[header + size - 4..header + size].copy_from_slice(&crc.sum().to_le_bytes());
        let err = all(&file[..]).unwrap_err();
        assert!(err.to_string().contains("needs more than 128 MiB"), "{err}");
    }
}
