//! Boots the bare-metal kernel in `kernel/` under QEMU (riscv64 virt, OpenSBI) and checks what
//! it prints on its serial port and its exit status: zonealloc as the page allocator of a
//! machine, its table in the machine's RAM, every CPU allocating and freeing concurrently on
//! its own per-CPU lists, every page written and checked, then drain, `check()`, buddyinfo.
//!
//! With `KERNEL_NODES=2` QEMU's machine has two NUMA nodes (`-numa`), which the kernel reads
//! from the device tree and runs as a `zonealloc::Machine` in static storage, allocating
//! node-locally.
//!
//! Needs `qemu-system-riscv64` and the `riscv64gc-unknown-none-elf` target, hence ignored by
//! default; `.ci/run` installs both and runs it with `--ignored`.

use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `kernel/run.sh` with `cpus` harts; returns the serial output after a zero status.
fn boot(cpus: u32) -> String {
    boot_nodes(cpus, 1)
}

/// Runs `kernel/run.sh` with `cpus` harts on `nodes` NUMA nodes.
fn boot_nodes(cpus: u32, nodes: u32) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernel/run.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("KERNEL_CPUS", cpus.to_string())
        .env("KERNEL_NODES", nodes.to_string())
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

/// The number after `name` in `line` ("numa_hit 10018 numa_miss 0" -> 10018 for
/// "numa_hit"; a trailing comma or parenthesis is dropped).
fn field(line: &str, name: &str) -> u64 {
    let mut words = line.split_whitespace();
    while let Some(w) = words.next() {
        if w == name {
            let v = words.next().map(|v| v.trim_end_matches([',', ')']));
            if let Some(v) = v.and_then(|v| v.parse().ok()) {
                return v;
            }
        }
    }
    panic!("no {name:?} in {line:?}")
}

#[test]
#[ignore = "needs qemu-system-riscv64 and the riscv64gc-unknown-none-elf target; .ci/run runs it"]
fn bare_metal_kernel_boots_two_numa_nodes_and_allocates_node_locally() {
    let text = boot_nodes(4, 2);
    let numa = line(&text, "numa: ");
    assert!(
        numa.starts_with("numa: 2 nodes from the device tree")
            && numa.ends_with("distances [[10, 20], [20, 10]]"),
        "{numa}"
    );
    // Each node: half the RAM, two CPUs, its zone and table on its own memory, its zonelist
    // itself first (build_zonelists).
    let mut managed = [0u64; 2];
    for (id, base, order) in [
        (0, "0x80000000..0x88000000", "[0, 1]"),
        (1, "0x88000000..0x90000000", "[1, 0]"),
    ] {
        let ram = line(&text, &format!("node {id}: ram "));
        assert!(ram.contains(base) && ram.contains("(128 MiB)"), "{ram}");
        let cpus = ram.rsplit("cpus [").next().unwrap().trim_end_matches(']');
        assert_eq!(cpus.split(", ").count(), 2, "{ram}");
        let zone = line(&text, &format!("node {id}: zone pfn "));
        let table = zone.split("metadata table at 0x").nth(1).unwrap();
        assert!(
            base.starts_with(&format!("0x{}", &table[..2])),
            "table off its node: {zone}"
        );
        assert!(zone.ends_with(&format!("fallback order {order}")), "{zone}");
        managed[id] = field(zone, "managed");
    }
    // Every CPU allocated, mostly (in practice only) on its own node, freed blocks handed
    // over from the CPU before it (CPUs 1 -> 2 and 3 -> 0 cross the nodes).
    let (mut allocs, mut local) = (0, 0);
    for c in 0..4 {
        let ops = line(&text, &format!("cpu {c} (hart "));
        let a = count_before(ops, " allocs");
        let l = count_before(ops, " on its node");
        assert!(a > 0 && l * 100 >= a * 95, "{ops}");
        assert!(count_before(ops, " from another cpu") > 0, "{ops}");
        allocs += a;
        local += l;
    }
    // A free goes to the freeing CPU's pageset of the page's own zone: some CPU of each node
    // freed into a pageset of the other node, and a vmstat worker expired such pagesets.
    for node in 0..2 {
        let remote_frees: u64 = text
            .lines()
            .filter(|l| l.starts_with("pcp cpu ") && l.contains(&format!(" node {node} (remote)")))
            .map(|l| field(l, "frees"))
            .sum();
        assert!(
            remote_frees > 0,
            "no frees into a remote pageset of node {node}:\n{text}"
        );
    }
    let changes: u64 = (0..4)
        .map(|c| field(line(&text, &format!("cpu {c} (hart ")), "changes"))
        .sum();
    assert!(changes > 0, "no vmstat expiry:\n{text}");
    // numastat: every allocation counted once on the node that gave it.
    let (mut hits, mut local_node) = (0, 0);
    for node in 0..2 {
        let s = line(&text, &format!("numastat node {node}: "));
        assert!(field(s, "numa_hit") > 0, "{s}");
        hits += field(s, "numa_hit") + field(s, "numa_miss");
        local_node += field(s, "local_node");
    }
    assert_eq!((hits, local_node), (allocs, local), "{text}");
    // After drain_all every page is back in its node's buddy.
    for (node, want) in managed.iter().enumerate() {
        let buddy = line(&text, &format!("Node {node}, zone   Normal "));
        let free: u64 = (0..)
            .zip(buddy.split_whitespace().skip(4))
            .map(|(o, n)| n.parse::<u64>().unwrap() << o)
            .sum();
        assert_eq!(free, *want, "{buddy}");
    }
    let check = line(&text, "check: ok ");
    assert!(
        check.ends_with(&format!("= managed {})", managed[0] + managed[1])),
        "{check}"
    );
    assert_eq!(text.lines().last(), Some("PASS"), "{text}");
}
