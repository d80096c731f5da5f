//! `zonealloc lab compare`'s reader on arbitrary bytes: each of two runs' `results.json` is
//! read as `runs::load_all` reads it (JSON into a [`runs::Run`]) and the comparison table is
//! printed, never a panic, whatever the strings (multi-byte, control characters) or shapes
//! (missing fields, wrong types) hold. The input is the two files separated by a NUL byte;
//! `fuzz/seeds/compare_json/` holds a small real pair.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zonealloc_lab::report::runs::{self, Run};

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(2, |&b| b == 0);
    let mut loaded = Vec::new();
    for label in ["a", "b"] {
        let Some(bytes) = parts.next() else { break };
        let Ok(json) = serde_json::from_slice(bytes) else {
            return;
        };
        loaded.push(Run {
            label: label.to_owned(),
            json,
        });
    }
    let _ = runs::compare_table(&loaded);
});
