//! The lab's trace input on arbitrary bytes behind each magic (plain, gzip, zstd, xz): the
//! decoders return an error or text, never panic, and never hold more than their bounded
//! buffers (the fuzzer's RSS limit catches a decoder that does). The first byte picks the
//! format, so that the fuzzer spends its time inside the decoders, not finding their magic.
#![no_main]

use std::io::Read;

use libfuzzer_sys::fuzz_target;
use zonealloc_lab::trace::parse;

const MAGICS: [&[u8]; 4] = [
    b"",
    &[0x1f, 0x8b],
    &[0x28, 0xb5, 0x2f, 0xfd],
    &[0xfd, b'7', b'z', b'X', b'Z', 0x00],
];

/// Output read before stopping: a small input may decompress to a lot; time, not memory,
/// is what that costs, and the fuzzer has better uses for it.
const READ_LIMIT: usize = 16 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let mut input = MAGICS[usize::from(pick) % MAGICS.len()].to_vec();
    input.extend_from_slice(rest);
    let Ok(mut text) = parse::decode(&input[..]) else {
        return;
    };
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    while total < READ_LIMIT {
        match text.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n,
        }
    }
});
