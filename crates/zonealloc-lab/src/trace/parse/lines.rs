//! Lines of text held in memory (the look-aheads over the text the stream keeps: the
//! snapshot reads, the worker runs, the rolls), each with its `\n`: `memchr`'s search for
//! the newline, many bytes a step, where `split_inclusive` tests one byte at a time.

/// The lines of `text`, each with its `\n` (the last without one where the text does not end
/// in one), as `text.split_inclusive(|&b| b == b'\n')` gives them.
pub fn lines(text: &[u8]) -> Lines<'_> {
    Lines { rest: text }
}

/// The iterator of [`lines`].
#[derive(Clone, Debug)]
pub struct Lines<'t> {
    rest: &'t [u8],
}

impl<'t> Iterator for Lines<'t> {
    type Item = &'t [u8];

    #[inline]
    fn next(&mut self) -> Option<&'t [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        let end = memchr::memchr(b'\n', self.rest).map_or(self.rest.len(), |nl| nl + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(line)
    }
}

impl std::iter::FusedIterator for Lines<'_> {}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn lines_are_split_inclusives() {
        for text in [
            &b""[..],
            b"\n",
            b"a",
            b"a\n",
            b"a\nbc",
            b"a\n\nbc\n",
            b"\n\n",
            b"x\r\ny\n",
        ] {
            let ours: Vec<&[u8]> = lines(text).collect();
            let std: Vec<&[u8]> = text.split_inclusive(|&b| b == b'\n').collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }
}
