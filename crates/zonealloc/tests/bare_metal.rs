//! Boots the bare-metal kernel in `kernel/` under QEMU (riscv64 virt, OpenSBI) and checks what
//! it prints on its serial port and its exit status: zonealloc as the page allocator of a
//! machine, its table in the machine's RAM, every CPU allocating and freeing concurrently on
//! its own per-CPU lists, every page written and checked, then drain, `check()`, buddyinfo.
//!
//! Needs `qemu-system-riscv64` and the `riscv64gc-unknown-none-elf` target, hence ignored by
//! default; `.ci/run` installs both and runs it with `--ignored`.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `kernel/run.sh` with `cpus` harts; returns the serial output after a zero status.
fn boot(cpus: u32) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernel/run.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("KERNEL_CPUS", cpus.to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run kernel/run.sh");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "kernel/run.sh exited with {:?}\n--- serial ---\n{text}\n--- stderr ---\n{err}",
        out.status
    );
    text
}

/// The first line starting with `prefix`, or a failure that shows the whole output.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{text}"))
}

/// The number just before `label` in `line` ("1506 allocs" -> 1506, "(560 from" -> 560).
fn count_before(line: &str, label: &str) -> u64 {
    let head = line
        .split(label)
        .next()
        .filter(|h| h.len() < line.len())
        .unwrap_or_else(|| panic!("no {label:?} in {line:?}"));
    let digits = head
        .trim_end()
        .rsplit(' ')
        .next()
        .unwrap_or("")
        .trim_start_matches('(');
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no count before {label:?} in {line:?}"))
}

fn assert_run(text: &str, cpus: u32) {
    let cpu_line = line(text, "cpus: ");
    assert!(
        cpu_line.starts_with(&format!("cpus: {cpus} (harts ")),
        "{cpu_line}"
    );
    line(text, "ram: 0x80000000..");
    let table = line(text, "zone: pfn ");
    assert!(table.contains("metadata table at 0x8"), "{table}");
    let managed = count_before(line(text, "pages managed: "), "(");
    assert!(managed > 0, "{text}");

    let (mut allocs, mut frees) = (0, 0);
    for c in 0..cpus {
        let ops = line(text, &format!("cpu {c} (hart "));
        let a = count_before(ops, " allocs");
        assert!(a > 0, "cpu {c} allocated nothing: {ops}");
        assert!(
            count_before(ops, " pages written and checked") >= a,
            "{ops}"
        );
        if cpus > 1 {
            assert!(count_before(ops, " from another cpu") > 0, "{ops}");
        }
        allocs += a;
        frees += count_before(ops, " frees");
        let pcp = line(text, &format!("pcp cpu {c}: "));
        assert!(pcp.starts_with(&format!("pcp cpu {c}: count 0 ")), "{pcp}");
        assert!(count_before(pcp, " misses") > 0, "{pcp}");
    }
    assert_eq!(allocs, frees, "every block allocated was freed once");
    let total = line(text, "total: ");
    assert_eq!(count_before(total, " allocs"), allocs, "{total}");
    assert_eq!(count_before(total, " frees"), frees, "{total}");

    let buddy = line(text, "Node 0, zone   Normal ");
    let free_blocks: Vec<u64> = buddy
        .split_whitespace()
        .skip(4)
        .map(|n| n.parse().expect("a buddyinfo count"))
        .collect();
    assert_eq!(free_blocks.len(), 11, "{buddy}");
    let free_pages: u64 = (0..).zip(&free_blocks).map(|(o, n)| n << o).sum();
    assert_eq!(free_pages, managed, "buddyinfo {buddy} after drain");
    let check = line(text, "check: ok ");
    assert!(check.ends_with(&format!("= managed {managed})")), "{check}");
    assert_eq!(text.lines().last(), Some("PASS"), "{text}");
}

#[test]
#[ignore = "needs qemu-system-riscv64 and the riscv64gc-unknown-none-elf target; .ci/run runs it"]
fn bare_metal_kernel_allocates_on_four_cpus_and_checks() {
    let text = boot(4);
    assert_run(&text, 4);
}

#[test]
#[ignore = "needs qemu-system-riscv64 and the riscv64gc-unknown-none-elf target; .ci/run runs it"]
fn bare_metal_kernel_takes_its_cpus_from_the_device_tree() {
    let text = boot(2);
    assert_run(&text, 2);
    assert!(!text.contains("cpu 2 (hart "), "{text}");
}
