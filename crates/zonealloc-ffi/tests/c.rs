//! Builds the C example and the C test program against the static library cargo built for
//! this crate, runs them and checks their exit status: once plain, and once under
//! AddressSanitizer when the C compiler accepts `-fsanitize=address`. The compiler is `$CC`,
//! else `cc`; without one the test says so loudly and passes (the only skip).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The libraries the Rust standard library needs when linked statically
/// (`rustc --print native-static-libs` for this target).
const SYSTEM_LIBS: &[&str] = &["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s"];

fn compiler() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".to_string())
}

fn have_compiler(cc: &str) -> bool {
    Command::new(cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The static library cargo built in the same compilation as the rlib this test links:
/// `target/<profile>/deps/libzonealloc_ffi.a`, beside this test's executable (`cargo build`
/// also copies it to `target/<profile>/`, but `cargo test` does not).
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let lib = deps.join("libzonealloc_ffi.a");
    assert!(
        lib.exists(),
        "{} not found: cargo builds it with the zonealloc-ffi library (crate-type staticlib)",
        lib.display()
    );
    lib
}

fn out_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().expect("deps dir").join("zonealloc-ffi-c");
    std::fs::create_dir_all(&dir).expect("create output dir");
    dir
}

/// Compiles `source` into `exe` with `flags`; Err with the compiler's output on failure.
fn build(cc: &str, source: &Path, exe: &Path, flags: &[&str]) -> Result<(), String> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g"])
        .args(flags)
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(source)
        .arg(static_lib())
        .args(SYSTEM_LIBS)
        .arg("-o")
        .arg(exe)
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cc} failed on {}:\n{}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Runs `exe`, asserting exit status 0, and returns its stdout.
fn run(exe: &Path) -> String {
    let out = Command::new(exe)
        .env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:exitcode=99",
        )
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} exited with {}:\nstdout:\n{stdout}\nstderr:\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Whether `cc` can build and run an AddressSanitizer program here.
fn asan_works(cc: &str) -> bool {
    let dir = out_dir();
    let src = dir.join("asan_probe.c");
    let exe = dir.join("asan_probe");
    std::fs::write(&src, "int main(void) { return 0; }\n").expect("write probe");
    Command::new(cc)
        .arg("-fsanitize=address")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new(&exe)
            .output()
            .is_ok_and(|o| o.status.success())
}

fn build_and_run(source: &str, check: impl Fn(&str)) {
    let cc = compiler();
    if !have_compiler(&cc) {
        eprintln!(
            "\n*** SKIPPED: no C compiler ({cc} --version failed); set CC or install one to \
             run the C programs ***\n"
        );
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = crate_dir.join(source);
    let stem = src
        .file_stem()
        .expect("file name")
        .to_string_lossy()
        .into_owned();
    let exe = out_dir().join(&stem);
    build(&cc, &src, &exe, &[]).unwrap_or_else(|e| panic!("{e}"));
    check(&run(&exe));
    if asan_works(&cc) {
        let exe = out_dir().join(format!("{stem}-asan"));
        build(
            &cc,
            &src,
            &exe,
            &["-fsanitize=address", "-fno-omit-frame-pointer"],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        check(&run(&exe));
    } else {
        eprintln!("note: {cc} cannot build AddressSanitizer programs here; ran without it");
    }
}

#[test]
fn c_test_program_passes_every_case() {
    build_and_run("tests/c/test_zonealloc.c", |out| {
        let last = out.lines().last().unwrap_or_default();
        assert!(last.ends_with(" passed, 0 failed"), "{out}");
        let passed: u32 = last
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            passed > 100,
            "the C program ran only {passed} checks: {out}"
        );
    });
}

/// The example again, linked against the shared library (`libzonealloc_ffi.so`, the
/// cdylib) instead of the static one: the same symbols are exported.
#[test]
fn c_example_runs_against_the_shared_library() {
    let cc = compiler();
    if !have_compiler(&cc) {
        eprintln!("\n*** SKIPPED: no C compiler ({cc} --version failed) ***\n");
        return;
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let deps = static_lib().parent().expect("deps dir").to_path_buf();
    let shared = deps.join("libzonealloc_ffi.so");
    assert!(
        shared.exists(),
        "{} not found: cargo builds it with the zonealloc-ffi library (crate-type cdylib)",
        shared.display()
    );
    let exe = out_dir().join("example-shared");
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("examples/c/example.c"))
        .arg(&shared)
        .arg(format!("-Wl,-rpath,{}", deps.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "linking against the shared library failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = run(&exe);
    assert!(stdout.contains("double free"), "{stdout}");
}

#[test]
fn c_example_runs() {
    build_and_run("examples/c/example.c", |out| {
        assert!(out.contains("not the head of an allocated block"), "{out}");
        assert!(out.contains("double free"), "{out}");
        assert!(out.contains("Node 0, zone"), "{out}");
    });
}
