//! The checked-in `include/zonealloc.h` is exactly what cbindgen generates from the crate:
//! a test that fails when someone changes the API without regenerating the header.
//! `ZONEALLOC_BLESS=1 cargo test -p zonealloc-ffi --test header` rewrites it.

use std::path::Path;

#[test]
fn checked_in_header_matches_cbindgen_output() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("read cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("header is UTF-8");
    let path = crate_dir.join("include/zonealloc.h");
    if std::env::var_os("ZONEALLOC_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/zonealloc.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "include/zonealloc.h is stale: regenerate it with \
         `ZONEALLOC_BLESS=1 cargo test -p zonealloc-ffi --test header`"
    );
}
