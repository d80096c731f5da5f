//! `scripts/capture-kmem` against a fake kernel. `CAPTURE_KMEM_SYSROOT` points the script at
//! a folder that mimics `/proc` and `/sys` (tracefs at `sys/kernel/tracing`), so hostile output
//! names, refused folders, unreadable ring-buffer stats and the pfn layout are tested without
//! tracing and without root. The fake ftrace instance is a plain folder the script makes; the
//! workload (the command the script runs) fills it with `per_cpu/cpuN/stats` and `trace`, as
//! the kernel's ring buffer would have been by then.
//!
//! `CAPTURE_KMEM_SCRIPT=PATH` runs another version of the script (how each test was checked to
//! fail on the script these replaced, given the same `CAPTURE_KMEM_SYSROOT` paths).

#![cfg(unix)]

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    match std::env::var_os("CAPTURE_KMEM_SCRIPT") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/capture-kmem"),
    }
}

const CLEAN_STATS: &str = "entries: 5\noverrun: 0\ncommit overrun: 0\nbytes: 100\n\
    oldest event ts: 1.000000\nnow ts: 2.000000\ndropped events: 0\nread events: 0\n";

const TRACE: &str = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 4/4   #P:2\n\
    \x20 sh-1 [000] ..... 100.000001: tracing_mark_write: KT_WORKLOAD_BEGIN workload\n\
    \x20 sh-1 [000] ..... 100.000002: mm_page_alloc: page=0x1 pfn=0x1000 order=0 migratetype=0 gfp_flags=GFP_KERNEL\n\
    \x20 sh-1 [001] ..... 100.000003: mm_page_free: page=0x1 pfn=0x1000 order=0\n\
    \x20 sh-1 [000] ..... 100.000004: tracing_mark_write: KT_WORKLOAD_END workload\n";

/// The workload: fills the instance the script made, then records the mode of `$PROBE_DIR`
/// (or of the default-named folder) as the capture sees it while running.
const WORKLOAD: &str = r#"set -e
for inst in "$CAPTURE_KMEM_SYSROOT"/sys/kernel/tracing/instances/capture-kmem-*; do
    cp -R "$TMPL"/. "$inst"/
done
if [ -n "${PROBE_DIR:-}" ]; then
    ls -ldn -- "$PROBE_DIR" > "$PROBE_OUT"
else
    for d in kmem-capture-*-*-*; do ls -ldn -- "$d" >> "$PROBE_OUT"; done
fi
"#;

// kpageflags bits (include/uapi/linux/kernel-page-flags.h, KPF_RESERVED from
// include/linux/kernel-page-flags.h).
const NOPAGE: u64 = 1 << 20;
const BUDDY: u64 = 1 << 10;
const RESERVED: u64 = 1 << 32;
const LRU: u64 = 1 << 5;
const MMAP: u64 = 1 << 11;
const SLAB: u64 = 1 << 7;
const HUGE: u64 = 1 << 17;
const COMPOUND_HEAD: u64 = 1 << 15;
const PGTABLE: u64 = 1 << 26;
const OFFLINE: u64 = 1 << 23;
const REFERENCED: u64 = 1 << 2;

struct Fake {
    dir: tempfile::TempDir,
    /// More environment for the script's runs ([`Fake::with_workqueue_event`]).
    env: Vec<(String, OsString)>,
}

struct Run {
    code: i32,
    stderr: String,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let f = Fake {
            dir,
            env: Vec::new(),
        };
        let proc_ = f.root().join("proc");
        let tr = f.root().join("sys/kernel/tracing");
        fs::create_dir_all(proc_.join("sys/vm")).unwrap();
        fs::create_dir_all(tr.join("instances")).unwrap();
        fs::create_dir_all(tr.join("events/kmem/mm_page_alloc")).unwrap();
        fs::create_dir_all(f.path("work")).unwrap();
        f.write(
            "root/proc/zoneinfo",
            "Node 0, zone   Normal\n  pages free     100\n",
        );
        f.write(
            "root/proc/buddyinfo",
            "Node 0, zone      DMA      1      1      0      0      0      0      0      0      0      1      3\n",
        );
        for name in ["pagetypeinfo", "vmstat", "cmdline", "cpuinfo", "iomem"] {
            f.write(&format!("root/proc/{name}"), &format!("fake {name}\n"));
        }
        f.write("root/proc/meminfo", "MemAvailable:    1000000 kB\n");
        f.write("root/proc/uptime", "123.45 0.00\n");
        f.write("root/proc/sys/vm/swappiness", "60\n");
        f.write("root/sys/kernel/tracing/trace_marker", "");
        f.write(
            "root/sys/kernel/tracing/events/kmem/mm_page_alloc/format",
            "name: mm_page_alloc\n",
        );
        f.write("tmpl/trace", TRACE);
        f.stats(0, CLEAN_STATS);
        f.stats(1, CLEAN_STATS);
        f.write("wl.sh", WORKLOAD);
        f
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn root(&self) -> PathBuf {
        self.path("root")
    }

    fn work(&self) -> PathBuf {
        self.path("work")
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    fn stats(&self, cpu: u32, text: &str) {
        self.write(&format!("tmpl/per_cpu/cpu{cpu}/stats"), text);
    }

    fn u64s(&self, rel: &str, values: &[u64]) {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        fs::write(self.path(rel), bytes).unwrap();
    }

    /// Runs `SHELL capture-kmem ARGS -- sh wl.sh` in `work/`, with the umask set first.
    fn run_with(&self, shell: &str, umask: &str, args: &[&OsStr], probe: Option<&Path>) -> Run {
        self.run_cmd(shell, umask, args, probe, &[])
    }

    /// [`run_with`](Self::run_with) with `EXTRA` after `wl.sh` on the command line.
    fn run_cmd(
        &self,
        shell: &str,
        umask: &str,
        args: &[&OsStr],
        probe: Option<&Path>,
        extra: &[&OsStr],
    ) -> Run {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(r#"umask "$0"; shell=$1; shift; exec "$shell" "$@""#)
            .arg(umask)
            .arg(shell)
            .arg(script())
            .args(args)
            .arg("--")
            .arg("sh")
            .arg(self.path("wl.sh"))
            .args(extra)
            .current_dir(self.work())
            .env("CAPTURE_KMEM_SYSROOT", self.root())
            .env("TMPL", self.path("tmpl"))
            .env("PROBE_OUT", self.path("probe"))
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        match probe {
            Some(p) => cmd.env("PROBE_DIR", p),
            None => cmd.env_remove("PROBE_DIR"),
        };
        let Output { status, stderr, .. } = cmd.output().expect("sh runs");
        Run {
            code: status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// The kernel gets `workqueue:workqueue_execute_start` in each instance the script makes
    /// (a `mkdir` ahead on `PATH` fills it in), whose filter takes a write when
    /// `filter_ok`, else refuses it (a folder in its place: refused even to root).
    fn with_workqueue_event(mut self, filter_ok: bool) -> Fake {
        let ev = "wqtmpl/events/workqueue/workqueue_execute_start";
        self.write(&format!("{ev}/enable"), "0\n");
        if filter_ok {
            self.write(&format!("{ev}/filter"), "none\n");
        } else {
            fs::create_dir_all(self.path(&format!("{ev}/filter"))).unwrap();
        }
        let real = Command::new("sh")
            .args(["-c", "command -v mkdir"])
            .output()
            .unwrap();
        let real = String::from_utf8(real.stdout).unwrap().trim().to_owned();
        self.write(
            "bin/mkdir",
            "#!/bin/sh\n\"$REAL_MKDIR\" \"$@\" || exit\nfor a do case $a in \
             */instances/capture-kmem-*) cp -R \"$WQ_TMPL\"/. \"$a\"/ ;; esac; done\n",
        );
        let shim = self.path("bin/mkdir");
        fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.path("bin")];
        dirs.extend(std::env::split_paths(&path));
        self.env = vec![
            ("PATH".into(), std::env::join_paths(dirs).unwrap()),
            ("REAL_MKDIR".into(), real.into()),
            ("WQ_TMPL".into(), self.path("wqtmpl").into()),
        ];
        self
    }

    fn run(&self, args: &[&OsStr]) -> Run {
        self.run_with("sh", "022", args, None)
    }

    fn probe(&self) -> String {
        fs::read_to_string(self.path("probe")).unwrap_or_default()
    }
}

fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every path under `dir` (not following links) whose last component is `name`.
fn find_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if e.file_name() == name {
            found.push(p.clone());
        }
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            find_named(&p, name, found);
        }
    }
}

fn entries(dir: &Path) -> Vec<OsString> {
    let mut v: Vec<OsString> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    v.sort();
    v
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

/// The capture in `cap` is whole: the fake's files copied, the trace, the lost-event totals.
fn assert_capture(cap: &Path, lost: &str) {
    let cap_s = cap.display();
    assert_eq!(
        read(&cap.join("before/zoneinfo")),
        "Node 0, zone   Normal\n  pages free     100\n"
    );
    assert_eq!(
        read(&cap.join("after/meminfo")),
        "MemAvailable:    1000000 kB\n"
    );
    assert_eq!(read(&cap.join("trace.txt")), TRACE, "{cap_s}");
    assert!(read(&cap.join("stats/per_cpu/cpu1/stats")).starts_with("entries: 5\n"));
    let lost_file = read(&cap.join("stats/lost"));
    assert!(
        lost_file.starts_with(lost),
        "{cap_s}: stats/lost is\n{lost_file}"
    );
    let readme = read(&cap.join("README"));
    assert!(
        readme.contains("markers:   KT_WORKLOAD_BEGIN/END workload: 1/1 found"),
        "{readme}"
    );
    assert!(
        readme.contains("events:    mm_page_alloc 1, mm_page_free 1"),
        "{readme}"
    );
}

#[test]
fn out_name_with_shell_and_sed_syntax_runs_nothing() {
    for shell in ["sh", "bash"] {
        if Command::new(shell).arg("-c").arg(":").status().is_err() {
            continue;
        }
        let fake = Fake::new();
        let name = "cap;id>PWNED;: |e;#";
        let r = fake.run_with(
            shell,
            "022",
            &[os("--compress"), os("none"), os("--out"), os(name)],
            None,
        );
        let mut pwned = Vec::new();
        find_named(fake.dir.path(), "PWNED", &mut pwned);
        assert!(
            pwned.is_empty(),
            "{shell}: the --out name ran a command: {pwned:?}\n{}",
            r.stderr
        );
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        assert_capture(&fake.work().join(name), "lost_total: 0\n");
        let readme = read(&fake.work().join(name).join("README"));
        assert!(readme.contains("0 lost on 2 CPUs"), "{readme}");
    }
}

#[test]
fn awkward_out_names_capture_and_count_losses() {
    let names = [
        "-leading-dash",
        "pipe|in|it",
        "space and 'quotes\" & ampersand",
        "new\nline",
        "-all|of it\n&'\\ at once",
        "escape\x1b[31mred",
    ];
    for name in names {
        let fake = Fake::new();
        fake.stats(
            1,
            &CLEAN_STATS
                .replace("overrun: 0\ncommit", "overrun: 3\ncommit")
                .replace("dropped events: 0", "dropped events: 2"),
        );
        let r = fake.run(&[os("-c"), os("none"), os("-o"), os(name)]);
        assert_eq!(
            r.code, 2,
            "{name:?}: events were lost, want exit 2\n{}",
            r.stderr
        );
        assert_eq!(entries(&fake.work()), [OsString::from(name)], "{name:?}");
        assert_capture(&fake.work().join(name), "lost_total: 5\noverrun: 3\ncommit_overrun: 0\ndropped_events: 2\ncpus_with_losses: cpu1\n");
        assert!(
            !r.stderr.contains('\x1b'),
            "{name:?}: a raw escape reached the terminal: {:?}",
            r.stderr
        );
    }
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let fake = Fake::new();
    let name = "title\x1b]0;owned\x07 and \x1b[2J";
    let args = [os("-c"), os("none"), os("-o"), os(name)];
    let r = fake.run_cmd("sh", "022", &args, None, &[os("\x1b[31mred"), os("\r")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains(['\x1b', '\x07', '\r']),
        "control characters reached the terminal: {:?}",
        r.stderr
    );
    assert!(r.stderr.contains("running: sh "), "{}", r.stderr);
    assert_capture(&fake.work().join(name), "lost_total: 0\n");
    let command = read(&fake.work().join(name).join("info/command"));
    assert!(command.ends_with(" '\x1b[31mred' '\r'\n"), "{command:?}");
}

#[test]
fn existing_out_is_refused_unless_empty_private_and_ours() {
    let fake = Fake::new();
    let w = fake.work();
    let refused = |name: &str, why: &str| {
        let r = fake.run(&[os("--out"), os(name)]);
        assert_eq!(r.code, 1, "{why}: --out {name} accepted\n{}", r.stderr);
        r
    };

    fs::create_dir(w.join("full")).unwrap();
    fs::write(w.join("full/keep"), "mine").unwrap();
    refused("full", "not empty");
    assert_eq!(entries(&w.join("full")), ["keep"]);

    fs::create_dir(w.join("open")).unwrap();
    fs::set_permissions(w.join("open"), fs::Permissions::from_mode(0o1777)).unwrap();
    let r = refused("open", "writable by others");
    assert!(r.stderr.contains("writable by others"), "{}", r.stderr);
    assert!(entries(&w.join("open")).is_empty());

    fs::create_dir(fake.path("bait")).unwrap();
    symlink(fake.path("bait"), w.join("link")).unwrap();
    refused("link", "a symbolic link to an empty folder");
    assert!(entries(&fake.path("bait")).is_empty());

    fs::write(w.join("file"), "x").unwrap();
    refused("file", "a file");

    refused("no/such/parent", "a missing parent");
    assert!(!w.join("no").exists());

    if is_root() {
        fs::create_dir(w.join("theirs")).unwrap();
        std::os::unix::fs::chown(w.join("theirs"), Some(65534), Some(65534)).unwrap();
        let r = refused("theirs", "owned by another user");
        assert!(r.stderr.contains("owned by uid 65534"), "{}", r.stderr);
        assert!(entries(&w.join("theirs")).is_empty());
    } else {
        eprintln!("not root: the folder-of-another-user case needs chown, skipped");
    }

    fs::create_dir(w.join("mine")).unwrap();
    fs::set_permissions(w.join("mine"), fs::Permissions::from_mode(0o755)).unwrap();
    let r = fake.run(&[os("-c"), os("none"), os("--out"), os("mine")]);
    assert_eq!(
        r.code, 0,
        "an empty private folder of ours is accepted\n{}",
        r.stderr
    );
    assert_capture(&w.join("mine"), "lost_total: 0\n");
}

#[test]
fn default_out_is_random_private_while_capturing_then_the_umask() {
    let fake = Fake::new();
    let w = fake.work();
    // Plant the predictable names of the next seconds as links to a folder of "another user".
    fs::create_dir(fake.path("bait")).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for s in now - 1..now + 8 {
        let o = Command::new("date")
            .arg("-d")
            .arg(format!("@{s}"))
            .arg("+%Y%m%d-%H%M%S")
            .output()
            .unwrap();
        let stamp = String::from_utf8(o.stdout).unwrap();
        symlink(
            fake.path("bait"),
            w.join(format!("kmem-capture-{}", stamp.trim())),
        )
        .unwrap();
    }
    let r = fake.run_with("sh", "027", &[os("-c"), os("none")], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        entries(&fake.path("bait")).is_empty(),
        "wrote through a planted link"
    );
    let made: Vec<PathBuf> = fs::read_dir(&w)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.is_symlink())
        .collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let cap = &made[0];
    let name = cap.file_name().unwrap().as_bytes();
    let suffix = &name[name.iter().rposition(|&b| b == b'-').unwrap() + 1..];
    assert!(
        suffix.len() >= 6 && name.starts_with(b"kmem-capture-"),
        "{cap:?}"
    );
    let probe = fake.probe();
    assert!(
        probe.starts_with("drwx------"),
        "mode while capturing: {probe:?}"
    );
    assert_capture(cap, "lost_total: 0\n");
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(cap), 0o750, "the folder ends with umask 027's mode");
    assert_eq!(mode(&cap.join("before")), 0o750);
    assert_eq!(mode(&cap.join("README")), 0o640);
    assert_eq!(mode(&cap.join("stats/per_cpu/cpu0/stats")), 0o640);
}

#[test]
fn explicit_out_is_private_while_capturing() {
    let fake = Fake::new();
    let cap = fake.work().join("cap");
    let r = fake.run_with(
        "sh",
        "022",
        &[os("-c"), os("none"), os("-o"), os("cap")],
        Some(&cap),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let probe = fake.probe();
    assert!(
        probe.starts_with("drwx------"),
        "mode while capturing: {probe:?}"
    );
    assert_eq!(
        fs::metadata(&cap).unwrap().permissions().mode() & 0o777,
        0o755
    );
}

#[test]
fn unreadable_or_malformed_ring_buffer_stats_mean_incomplete() {
    type Break = fn(&Fake);
    let cases: [(&str, Break); 7] = [
        ("stats is a folder", |f| {
            fs::remove_file(f.path("tmpl/per_cpu/cpu1/stats")).unwrap();
            fs::create_dir(f.path("tmpl/per_cpu/cpu1/stats")).unwrap();
        }),
        ("a CPU without stats", |f| {
            fs::create_dir(f.path("tmpl/per_cpu/cpu2")).unwrap()
        }),
        ("overrun not a number", |f| {
            f.stats(
                1,
                &CLEAN_STATS.replace("overrun: 0\ncommit", "overrun: lots\ncommit"),
            )
        }),
        ("no dropped events line", |f| {
            f.stats(1, &CLEAN_STATS.replace("dropped events: 0\n", ""))
        }),
        ("empty stats", |f| f.stats(1, "")),
        ("overrun twice", |f| {
            f.stats(1, &format!("{CLEAN_STATS}overrun: 7\n"))
        }),
        ("no per_cpu at all", |f| {
            fs::remove_dir_all(f.path("tmpl/per_cpu")).unwrap()
        }),
    ];
    for (what, break_it) in cases {
        let fake = Fake::new();
        break_it(&fake);
        let r = fake.run(&[os("-c"), os("none"), os("-o"), os("cap")]);
        assert_eq!(
            r.code, 2,
            "{what}: want exit 2 (not known complete)\n{}",
            r.stderr
        );
        let cap = fake.work().join("cap");
        let lost = read(&cap.join("stats/lost"));
        assert!(lost.starts_with("lost_total: unknown\n"), "{what}: {lost}");
        let readme = read(&cap.join("README"));
        assert!(
            readme.contains("trace INCOMPLETE") && !readme.contains("trace complete"),
            "{what}: {readme}"
        );
    }
}

fn layout_flags() -> Vec<u64> {
    let mut v = vec![NOPAGE, NOPAGE, RESERVED, RESERVED];
    v.extend([BUDDY; 4]); // 4..=7: an order-2 free block (KPF_BUDDY on head and tail pages)
    v.extend([0; 4]); // 8..=11: no flag (per-CPU list pages, flagless kernel allocations)
    v.extend([BUDDY, BUDDY, 0]); // 12..=13 an order-1 block, 14
    v.extend([LRU | MMAP; 3]); // 15..=17
    v.extend([SLAB, 0, BUDDY, BUDDY]); // 18, 19, 20..=21
    v.extend([0; 10]); // 22..=31
    v.extend([HUGE | COMPOUND_HEAD, PGTABLE, OFFLINE, REFERENCED]); // 32..=35
    v.extend([0; 4]); // 36..=39
    v.extend([BUDDY; 24]); // 40..=63
    v
}

#[test]
fn pfn_layout_mapcount_and_nodes_are_recorded() {
    let fake = Fake::new();
    // Three orders (0..=2): the header says so, for the reader's split of free runs into blocks.
    fake.write(
        "root/proc/buddyinfo",
        "Node 0, zone      DMA      1      1      0\n",
    );
    fake.u64s("root/proc/kpageflags", &layout_flags());
    let mut counts = vec![0u64; layout_flags().len()];
    counts[15] = 1;
    counts[16] = 1;
    counts[17] = 2;
    counts[40] = 1 << 33;
    fake.u64s("root/proc/kpagecount", &counts);
    let node = "root/sys/devices/system/node";
    fake.write(&format!("{node}/online"), "0-1\n");
    fake.write(&format!("{node}/node0/cpulist"), "0-1\n");
    fake.write(&format!("{node}/node0/distance"), "10 20\n");
    fake.write(
        &format!("{node}/node0/meminfo"),
        "Node 0 MemTotal:  1048576 kB\n",
    );
    fake.write(
        &format!("{node}/node0/numastat"),
        "numa_hit 5\nnuma_miss 0\n",
    );
    fake.write(&format!("{node}/node1/cpulist"), "2-3\n");
    fake.write(&format!("{node}/node1/distance"), "20 10\n");
    fake.write(&format!("{node}/node1/numastat"), "numa_hit 7\n");
    fake.write(&format!("{node}/nodefoo/cpulist"), "not a node\n");
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("cap")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cap = fake.work().join("cap");
    let want_layout = "# zonealloc pfn layout 1: start_pfn count class; max_order 2\n\
        0 2 N\n2 2 R\n4 4 B\n8 4 F\n12 2 B\n14 1 F\n15 3 M\n18 1 S\n19 1 F\n20 2 B\n\
        22 10 F\n32 1 H\n33 1 T\n34 1 O\n35 1 U\n36 4 F\n40 24 B\nend 64\n";
    let want_count =
        "# zonealloc pfn mapcount 1: start_pfn count mapcount (runs of non-zero values)\n\
        15 2 1\n17 1 2\n40 1 8589934592\nend 64\n";
    for phase in ["before", "after"] {
        let d = cap.join(phase);
        assert_eq!(read(&d.join("layout")), want_layout, "{phase}");
        assert_eq!(read(&d.join("mapcount")), want_count, "{phase}");
        assert_eq!(read(&d.join("nodes/online")), "0-1\n");
        assert_eq!(read(&d.join("nodes/node0/distance")), "10 20\n");
        assert_eq!(
            read(&d.join("nodes/node0/meminfo")),
            "Node 0 MemTotal:  1048576 kB\n"
        );
        assert_eq!(read(&d.join("nodes/node1/numastat")), "numa_hit 7\n");
        assert!(!d.join("nodes/node1/meminfo").exists());
        assert!(!d.join("nodes/nodefoo").exists());
    }
    let readme = read(&cap.join("README"));
    assert!(
        readme.contains("layout:    before/ and after/ layout, mapcount (max_order 2)"),
        "{readme}"
    );

    // --no-layout: neither file.
    let r = fake.run(&[
        os("-c"),
        os("none"),
        os("-o"),
        os("cap2"),
        os("--no-layout"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!fake.work().join("cap2/before/layout").exists());
    assert!(fake.work().join("cap2/before/nodes/node0/cpulist").exists());
}

#[test]
fn a_kpageflags_read_error_loses_the_layout_loudly() {
    type Break = fn(&Fake);
    let cases: [(&str, Break); 2] = [
        // Three 32-bit words: a u64 cut in half, as a read stopping mid-entry would leave it.
        ("a torn entry", |f| {
            fs::write(f.path("root/proc/kpageflags"), [0u8; 12]).unwrap()
        }),
        ("od cannot read it", |f| {
            fs::create_dir(f.path("root/proc/kpageflags")).unwrap()
        }),
    ];
    for (what, break_it) in cases {
        let fake = Fake::new();
        fake.u64s("root/proc/kpagecount", &[0, 1, 0, 0]);
        break_it(&fake);
        let r = fake.run(&[os("-c"), os("none"), os("-o"), os("cap")]);
        assert_eq!(r.code, 0, "{what}: the trace is complete\n{}", r.stderr);
        let cap = fake.work().join("cap");
        assert!(
            !cap.join("before/layout").exists(),
            "{what}: a partial layout was kept"
        );
        assert_eq!(read(&cap.join("before/mapcount")), "# zonealloc pfn mapcount 1: start_pfn count mapcount (runs of non-zero values)\n1 1 1\nend 4\n");
        let readme = read(&cap.join("README"));
        assert!(
            readme.contains("layout:    INCOMPLETE, missing: before/layout"),
            "{what}: {readme}"
        );
        assert!(r.stderr.contains("could not read"), "{what}: {}", r.stderr);
    }
}

#[test]
fn a_kernel_without_the_workqueue_event_is_told_only_when_asked() {
    // The fake kernel's instance has no workqueue event: asked for, it is named missing;
    // by default nothing is said.
    let fake = Fake::new();
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("a"), os("--workqueue")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("workqueue:workqueue_execute_start"),
        "{}",
        r.stderr
    );
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("b")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("workqueue"), "{}", r.stderr);
    assert!(!fake.work().join("b/info/workqueue_filter").exists());
}

#[test]
fn workqueue_runs_are_traced_by_default_where_the_filter_holds() {
    let filter = |f: &Fake, cap: &str| {
        fs::read_to_string(f.work().join(cap).join("info/workqueue_filter")).ok()
    };
    let fake = Fake::new().with_workqueue_event(true);
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("a")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        filter(&fake, "a").as_deref(),
        Some("function.function == vmstat_update || function.function == vmstat_shepherd\n")
    );
    assert!(read(&fake.work().join("a/README")).contains("workqueue:workqueue_execute_start"));
    let r = fake.run(&[
        os("-c"),
        os("none"),
        os("-o"),
        os("b"),
        os("--no-workqueue"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(filter(&fake, "b"), None);
    assert!(!read(&fake.work().join("b/README")).contains("workqueue"));

    // No filter takes: by default not traced (every work item's run would be), with a note;
    // with --workqueue traced unfiltered.
    let fake = Fake::new().with_workqueue_event(false);
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("c")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("runs are not traced"), "{}", r.stderr);
    assert_eq!(filter(&fake, "c"), None);
    let r = fake.run(&[os("-c"), os("none"), os("-o"), os("d"), os("--workqueue")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("every work item's run is traced"),
        "{}",
        r.stderr
    );
    assert_eq!(filter(&fake, "d").as_deref(), Some("none\n"));
}
