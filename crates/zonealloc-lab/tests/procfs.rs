//! The `/proc` snapshot reader on real kernels' files (`tests/data/proc/`), on files written
//! by zonealloc's own `/proc` writers, and through `read_dir`'s file handling.

use std::path::{Path, PathBuf};

use zonealloc::{stats, CpuId, MemoryRegion, MigrateType, Node, Order, ZoneConfig, ZoneType};
use zonealloc_lab::procfs::{
    infer_format, ErrorKind, MigrateTypeName, ProcFile, ProcSnapshot, Tolerance, ZoneinfoFormat,
};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/proc")
        .join(name)
}

fn kernel_types(cma: bool) -> Vec<MigrateTypeName> {
    let mut v: Vec<MigrateTypeName> = [
        MigrateType::Unmovable,
        MigrateType::Movable,
        MigrateType::Reclaimable,
        MigrateType::HighAtomic,
    ]
    .into_iter()
    .map(MigrateTypeName::Known)
    .collect();
    if cma {
        v.push(MigrateTypeName::Cma);
    }
    v.push(MigrateTypeName::Known(MigrateType::Isolate));
    v
}

#[test]
fn linux_6_1_snapshot_reads_as_pre_6_7() {
    let s = ProcSnapshot::read_dir(&data("linux-6.1-p1-before")).unwrap();
    assert_eq!(s.format, ZoneinfoFormat::Pre6_7);
    assert!(s.features.boost && !s.features.promo && !s.features.high_min_max);
    assert!(!s.features.highatomic && s.features.stat_threshold);
    assert_eq!(s.cpus, [0, 1, 2, 3]);
    assert_eq!(s.pageblock_order, Some(9));
    assert_eq!(s.orders, 11);
    assert_eq!(s.migratetypes, kernel_types(false));
    let zones: Vec<_> = s.zones.iter().map(|z| (z.node, z.zone)).collect();
    assert_eq!(zones, [(0, ZoneType::Dma), (0, ZoneType::Dma32)]);
    let empty: Vec<_> = s.unpopulated.iter().map(|z| z.zone).collect();
    assert_eq!(
        empty,
        [ZoneType::Normal, ZoneType::Movable, ZoneType::Device]
    );

    let dma = s.zone(0, ZoneType::Dma).unwrap();
    assert_eq!(dma.start_pfn, 1);
    assert_eq!(
        (dma.spanned_pages, dma.present_pages, dma.managed_pages),
        (4095, 3998, 3840)
    );
    assert_eq!(dma.protection[1], (ZoneType::Dma32, 1951));
    assert_eq!(dma.protection.len(), 5);
    assert_eq!(dma.protection[3], (ZoneType::Movable, 1951));

    let z = s.zone(0, ZoneType::Dma32).unwrap();
    assert_eq!(z.start_pfn, 4096);
    assert_eq!(
        (z.spanned_pages, z.present_pages, z.managed_pages),
        (520157, 520157, 499571)
    );
    assert_eq!(z.free_pages, 422456);
    let w = z.watermarks;
    assert_eq!(
        (w.min, w.low, w.high, w.promo, w.boost),
        (11177, 13971, 16765, None, Some(0))
    );
    let p = z.pagesets[0];
    assert_eq!((p.cpu, p.count, p.high, p.batch), (0, 776, 3492, 63));
    assert_eq!(
        (p.high_min, p.high_max, p.stat_threshold),
        (None, None, Some(30))
    );
    assert_eq!(z.pcp_pages(), 776 + 771 + 764 + 217);
    // 6.1 keeps PCP pages out of nr_free_pages: the buddy lists hold exactly `pages free`.
    assert_eq!(z.buddy_free_pages(), Some(422456));
    assert_eq!(z.used_pages(), Some(499571 - 422456 - 2528));
    assert_eq!(z.counters["nr_free_pages"], 422456);
    let area = z.free_area.as_ref().unwrap();
    assert_eq!(area.pageblocks, [184, 826, 6, 0, 0]);
    assert_eq!(area.free[MigrateType::Movable.index()][10].blocks, 411);
    assert_eq!(
        z.buddy_free.as_deref(),
        Some(&[2, 1, 1, 2, 0, 1, 0, 2, 1, 2, 411][..])
    );
    assert_eq!(s.node_counters[&0]["nr_shmem"], 960);
}

#[test]
fn linux_7_2_snapshot_reads_as_high_min_max() {
    let s = ProcSnapshot::read_dir(&data("linux-7.2-p1-before")).unwrap();
    assert_eq!(s.format, ZoneinfoFormat::HighMinMax);
    assert!(s.features.boost && s.features.promo && s.features.high_min_max);
    assert!(s.features.highatomic);
    assert_eq!(s.migratetypes, kernel_types(true));
    let z = s.zone(0, ZoneType::Dma32).unwrap();
    assert_eq!(z.watermarks.promo, Some(19559));
    assert_eq!(z.managed_pages, 500208);
    let p = z.pagesets[2];
    assert_eq!((p.count, p.high, p.batch), (2264, 15551, 63));
    assert_eq!((p.high_min, p.high_max), (Some(3492), Some(15551)));
    assert_eq!(
        (z.reserved_highatomic, z.free_highatomic),
        (Some(0), Some(0))
    );
    // `pages free` is 28 above the free lists' pages: vmstat drift (threshold 30, 4 CPUs).
    assert_eq!(z.free_pages, 416994);
    assert_eq!(z.buddy_free_pages(), Some(416966));
    assert_eq!(z.counters["nr_free_pages_blocks"], 406 * 1024 + 512);
    let area = z.free_area.as_ref().unwrap();
    assert_eq!(area.pageblocks, [152, 860, 4, 0, 0, 0]);
    assert_eq!(area.free.len(), 6);
}

#[test]
fn format_is_inferred_from_zoneinfo_alone() {
    for (dir, want) in [
        ("linux-6.1-p1-before", ZoneinfoFormat::Pre6_7),
        ("linux-7.2-p1-before", ZoneinfoFormat::HighMinMax),
    ] {
        let text = std::fs::read_to_string(data(dir).join("zoneinfo")).unwrap();
        assert_eq!(infer_format(&text).unwrap(), want, "{dir}");
    }
}

/// Copies a real snapshot into a fresh folder, minus `drop`, with `edit` applied to zoneinfo.
fn scratch(src: &str, drop: &[&str], edit: impl Fn(String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["zoneinfo", "pagetypeinfo", "buddyinfo"] {
        if drop.contains(&f) {
            continue;
        }
        let mut text = std::fs::read_to_string(data(src).join(f)).unwrap();
        if f == "zoneinfo" {
            text = edit(text);
        }
        std::fs::write(dir.path().join(f), text).unwrap();
    }
    dir
}

#[test]
fn read_dir_names_the_full_path_and_line() {
    // Cut zoneinfo inside DMA32's block, before `managed` (line 104 of the 6.1 file).
    let dir = scratch("linux-6.1-p1-before", &[], |t| {
        t.lines().take(103).collect::<Vec<_>>().join("\n")
    });
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert_eq!(err.file, ProcFile::Zoneinfo);
    assert_eq!(err.line, 104);
    assert!(
        matches!(
            err.kind,
            ErrorKind::MissingField {
                field: "managed",
                ..
            }
        ),
        "{err}"
    );
    let shown = err.to_string();
    let want = format!("{}:104:", dir.path().join("zoneinfo").display());
    assert!(shown.starts_with(&want), "{shown}");
}

#[test]
fn read_dir_needs_zoneinfo_and_a_free_list_file() {
    let dir = scratch("linux-6.1-p1-before", &["zoneinfo"], |t| t);
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Io(_)) && err.file == ProcFile::Zoneinfo);

    let dir = scratch("linux-6.1-p1-before", &["pagetypeinfo", "buddyinfo"], |t| t);
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Io(_)), "{err}");

    // buddyinfo alone is enough (pagetypeinfo is root-only on most systems).
    let dir = scratch("linux-7.2-p1-before", &["pagetypeinfo"], |t| t);
    let s = ProcSnapshot::read_dir(dir.path()).unwrap();
    let z = s.zone(0, ZoneType::Dma32).unwrap();
    assert!(z.free_area.is_none() && s.migratetypes.is_empty());
    assert_eq!(z.buddy_free_pages(), Some(416966));
    assert_eq!(s.orders, 11);

    // pagetypeinfo alone too.
    let dir = scratch("linux-7.2-p1-before", &["buddyinfo"], |t| t);
    let s = ProcSnapshot::read_dir(dir.path()).unwrap();
    assert_eq!(
        s.zone(0, ZoneType::Dma32).unwrap().buddy_free_pages(),
        Some(416966)
    );
}

#[test]
fn a_zone_missing_from_buddyinfo_is_named() {
    let dir = scratch("linux-6.1-p1-before", &[], |t| t);
    let buddyinfo = dir.path().join("buddyinfo");
    let first = std::fs::read_to_string(&buddyinfo).unwrap();
    std::fs::write(&buddyinfo, first.lines().next().unwrap().to_owned() + "\n").unwrap();
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert_eq!((err.file, err.line), (ProcFile::Buddyinfo, 2), "{err}");
    assert!(err.to_string().contains("zone DMA32"), "{err}");
}

#[test]
fn the_real_snapshots_agree_exactly_up_to_vmstat_drift() {
    for dir in ["linux-6.1-p1-before", "linux-7.2-p1-before"] {
        let s = ProcSnapshot::read_dir_with(&data(dir), Tolerance::Exact).unwrap();
        assert!(s.skews.is_empty(), "{dir}: {:?}", s.skews);
    }
}

#[test]
fn zonealloc_proc_text_reads_back_as_the_zones_state() {
    const MIB: u64 = 1 << 20;
    let map = [
        MemoryRegion::usable(MIB, 64 * MIB),
        MemoryRegion::usable(4096 * MIB, 32 * MIB),
    ];
    let node = Node::from_memory_map(0, &map, ZoneConfig::default()).unwrap();
    let mut live = Vec::new();
    for i in 0..3000u64 {
        let order = Order::new([0, 0, 0, 1, 2, 3, 9][(i % 7) as usize]).unwrap();
        let mt = [
            MigrateType::Movable,
            MigrateType::Unmovable,
            MigrateType::Reclaimable,
        ][(i % 3) as usize];
        if let Ok(pfn) = node.alloc(order, mt) {
            live.push((pfn, order));
        }
    }
    for (pfn, order) in live.into_iter().step_by(2) {
        node.free(pfn, order).unwrap();
    }
    let snapshots: Vec<_> = node.snapshots().collect();
    let (mut zoneinfo, mut buddyinfo, mut pagetypeinfo) =
        (String::new(), String::new(), String::new());
    zonealloc_lab::inspect::write_zoneinfo(&mut zoneinfo, &node).unwrap();
    stats::write_buddyinfo(&mut buddyinfo, &snapshots).unwrap();
    stats::write_pagetypeinfo(&mut pagetypeinfo, &snapshots).unwrap();

    let s = ProcSnapshot::parse(&zoneinfo, Some(&pagetypeinfo), Some(&buddyinfo))
        .unwrap_or_else(|e| panic!("{e}\n{zoneinfo}"));
    assert_eq!(s.format, ZoneinfoFormat::HighMinMax);
    assert_eq!(s.zones.len(), node.zones().count());
    for (z, snap) in node.zones().zip(&snapshots) {
        let got = s.zone(0, z.zone_type()).unwrap();
        assert_eq!(got.start_pfn, z.span().0.get());
        assert_eq!(got.free_pages, z.free_pages());
        assert_eq!(got.managed_pages, z.managed_pages());
        assert_eq!(
            got.watermarks.min,
            z.watermarks().min + z.watermarks().boost
        );
        let orders = usize::from(snap.max_order) + 1;
        assert_eq!(got.buddy_free.as_deref(), Some(&snap.nr_free[..orders]));
        assert_eq!(got.buddy_free_pages(), Some(z.free_pages()));
        let area = got.free_area.as_ref().unwrap();
        assert_eq!(area.pageblock_order, snap.pageblock_order);
        for mt in MigrateType::ALL {
            let blocks: Vec<u64> = area.free[mt.index()].iter().map(|c| c.blocks).collect();
            assert_eq!(blocks, snap.free_by_type[mt.index()][..orders], "{mt}");
        }
        assert_eq!(area.pageblocks, snap.pageblocks_by_type);
        for p in &got.pagesets {
            let want = z.pcp_info(CpuId(p.cpu));
            assert_eq!(
                (p.count, p.high, p.batch),
                (want.count as u32, want.high as u32, want.batch as u32)
            );
            assert_eq!(
                (p.high_min, p.high_max),
                (Some(want.high_min as u32), Some(want.high_max as u32))
            );
        }
        assert_eq!(
            got.used_pages(),
            Some(z.managed_pages() - z.free_pages() - got.pcp_pages())
        );
    }
    assert!(
        s.zones.iter().any(|z| z.pcp_pages() > 0),
        "the workload left PCP pages"
    );
}

/// Every capture in `shared/kernel` (beside the checkout, or `$ZONEALLOC_SHARED`): run with
/// `--ignored` where the captures are.
#[test]
#[ignore = "reads the captures in shared/kernel, which only the lab machines have"]
fn every_shared_capture_reads_and_is_consistent() {
    let shared = std::env::var_os("ZONEALLOC_SHARED").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    let root = shared.join("kernel");
    let mut dirs = Vec::new();
    for kernel in std::fs::read_dir(&root).unwrap() {
        let kernel = kernel.unwrap().path();
        if !kernel.is_dir() {
            continue;
        }
        for snap in std::fs::read_dir(kernel.join("snap")).unwrap() {
            dirs.push(snap.unwrap().path());
        }
        for boot in std::fs::read_dir(kernel.join("boot_snapshots")).unwrap() {
            for snap in std::fs::read_dir(boot.unwrap().path().join("snap")).unwrap() {
                dirs.push(snap.unwrap().path());
            }
        }
    }
    assert!(!dirs.is_empty());
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| ProcSnapshot::read_dir(d).err().map(|e| e.to_string()))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn texts() -> Vec<[String; 3]> {
        ["linux-6.1-p1-before", "linux-7.2-p1-before"]
            .iter()
            .map(|d| {
                ["zoneinfo", "pagetypeinfo", "buddyinfo"]
                    .map(|f| std::fs::read_to_string(data(d).join(f)).unwrap())
            })
            .collect()
    }

    /// One damage to a text: cut it, drop a line, or overwrite a byte with a character the
    /// formats use.
    fn damage(text: &str, kind: u8, at: usize, ch: char) -> String {
        let at = at % (text.len() + 1);
        match kind % 3 {
            0 => text[..text.floor_char_boundary_compat(at)].to_owned(),
            1 => {
                let mut lines: Vec<&str> = text.lines().collect();
                if !lines.is_empty() {
                    let i = at % lines.len();
                    lines.remove(i);
                }
                lines.join("\n")
            }
            _ => {
                let i = text.floor_char_boundary_compat(at);
                let mut s = text[..i].to_owned();
                s.push(ch);
                s.push_str(text[i..].get(1..).unwrap_or(""));
                s
            }
        }
    }

    trait Boundary {
        fn floor_char_boundary_compat(&self, i: usize) -> usize;
    }

    impl Boundary for str {
        fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
            i = i.min(self.len());
            while !self.is_char_boundary(i) {
                i -= 1;
            }
            i
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Damaged snapshots are rejected with an error or read, never a panic, and an error
        /// points into the damaged file.
        #[test]
        fn damaged_snapshots_never_panic(
            which in 0usize..2,
            file in 0usize..3,
            kind in any::<u8>(),
            at in any::<usize>(),
            ch in prop::sample::select(vec!['0', '9', ' ', '\n', ':', ',', '>', 'x', '(']),
        ) {
            let mut t = texts().swap_remove(which);
            t[file] = damage(&t[file], kind, at, ch);
            if let Err(e) = ProcSnapshot::parse(&t[0], Some(&t[1]), Some(&t[2])) {
                let i = match e.file {
                    ProcFile::Zoneinfo => 0,
                    ProcFile::Pagetypeinfo => 1,
                    ProcFile::Buddyinfo => 2,
                    ProcFile::Layout | ProcFile::Nodes => {
                        prop_assert!(false, "no layout or nodes/ was given: {e}");
                        0
                    }
                };
                let lines = t[i].lines().count();
                prop_assert!(e.line <= lines + 1, "{e}");
                let _ = e.to_string();
            }
        }

        /// A damaged pfn layout is refused with its line or read whole, never a panic; what
        /// is read covers every pfn to its end once, and its free blocks are aligned.
        #[test]
        fn damaged_layouts_never_panic(
            kind in any::<u8>(),
            at in any::<usize>(),
            ch in prop::sample::select(vec!['0', '9', ' ', '\n', 'B', 'F', 'x', '#', 'e']),
        ) {
            let good = "# zonealloc pfn layout 1: start_pfn count class; max_order 3\n\
                        0 1 R\n1 14 B\n15 1 F\n16 5 M\n21 11 B\nend 32\n";
            let text = damage(good, kind, at, ch);
            match zonealloc_lab::procfs::parse_layout(&text) {
                Ok(l) => {
                    let pages: u64 = l.runs_in(0..l.end).map(|r| r.count).sum();
                    prop_assert_eq!(pages, l.end);
                    for (pfn, order) in l.free_blocks(0..l.end, l.max_order) {
                        prop_assert!(pfn % (1 << order) == 0 && order <= l.max_order);
                    }
                }
                Err(e) => {
                    prop_assert!(e.line <= text.lines().count() + 1, "{e}");
                    prop_assert_eq!(e.file, ProcFile::Layout);
                }
            }
        }
    }
}

/// The 6.1 snapshot in a fresh folder, with `edit(file, text)` applied to each file.
fn edited(edit: impl Fn(&str, String) -> String) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["zoneinfo", "pagetypeinfo", "buddyinfo"] {
        let text = std::fs::read_to_string(data("linux-6.1-p1-before").join(f)).unwrap();
        std::fs::write(dir.path().join(f), edit(f, text)).unwrap();
    }
    dir
}

/// The 6.1 snapshot with zoneinfo's `from` replaced by `to` (once).
fn zoneinfo_with(from: &str, to: &str) -> tempfile::TempDir {
    edited(|f, t| {
        if f == "zoneinfo" {
            assert!(t.contains(from), "{from}");
            t.replacen(from, to, 1)
        } else {
            t
        }
    })
}

fn line_of(dir: &Path, file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

#[test]
fn a_cpu_id_beyond_nr_cpus_is_refused_at_its_line() {
    // `cpu: 4294967295` made the replay's `c + 1` wrap; `cpu: 100000000` sized per-CPU
    // arrays of 23 GB before the CPU count was checked.
    for cpu in ["4294967295", "100000000", "8192"] {
        let dir = zoneinfo_with("    cpu: 3\n", &format!("    cpu: {cpu}\n"));
        let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
        let line = line_of(dir.path(), "zoneinfo", &format!("cpu: {cpu}"));
        assert_eq!((err.file, err.line), (ProcFile::Zoneinfo, line), "{err}");
        assert!(err.to_string().contains("CPU ids are 0..=8191"), "{err}");
    }
    // The largest id NR_CPUS allows reads (the replay refuses it later, with its own range).
    let dir = edited(|f, t| {
        if f == "zoneinfo" {
            t.replace("    cpu: 3\n", "    cpu: 8191\n")
        } else {
            t
        }
    });
    let s = ProcSnapshot::read_dir(dir.path()).unwrap();
    assert_eq!(s.cpus, [0, 1, 2, 8191]);
}

#[test]
fn a_cpu_listed_twice_or_out_of_order_is_refused() {
    let dir = zoneinfo_with("    cpu: 3\n", "    cpu: 2\n");
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::Duplicate { .. }), "{err}");
    assert!(err.to_string().contains("cpu 2"), "{err}");
    let dir = zoneinfo_with("    cpu: 1\n", "    cpu: 5\n");
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(err.to_string().contains("in CPU order"), "{err}");
}

#[test]
fn a_snapshot_file_that_is_a_device_or_too_large_is_refused_by_name() {
    let dir = edited(|_, t| t);
    let zi = dir.path().join("zoneinfo");
    std::fs::remove_file(&zi).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &zi).unwrap();
    let t = std::time::Instant::now();
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    assert!(matches!(err.kind, ErrorKind::NotRegular), "{err}");
    assert!(err.to_string().contains(&zi.display().to_string()), "{err}");

    // A regular file over the bound: read no further than the bound plus one byte.
    std::fs::remove_file(&zi).unwrap();
    let f = std::fs::File::create(&zi).unwrap();
    f.set_len(zonealloc_lab::procfs::MAX_FILE_BYTES + 1)
        .unwrap();
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(matches!(err.kind, ErrorKind::TooLarge { .. }), "{err}");
    assert!(
        err.to_string().contains("zoneinfo: longer than 8 MiB"),
        "{err}"
    );
}

#[test]
fn an_invalid_byte_in_any_file_is_an_error_naming_file_and_line() {
    for file in ["zoneinfo", "pagetypeinfo", "buddyinfo"] {
        let dir = edited(|f, t| {
            if f == file {
                let mut lines: Vec<String> = t.lines().map(str::to_owned).collect();
                lines[1].push('\u{1}');
                lines.join("\n")
            } else {
                t
            }
        });
        let path = dir.path().join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.iter().position(|&b| b == 1).unwrap();
        bytes[at] = 0xff;
        std::fs::write(&path, bytes).unwrap();
        // pagetypeinfo with an invalid byte was dropped without a word (exit 0, other
        // results).
        let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
        assert_eq!(err.line, 2, "{file}: {err}");
        assert!(
            matches!(err.kind, ErrorKind::NotText { .. }),
            "{file}: {err}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains(&format!("{}:2: not UTF-8", path.display())),
            "{shown}"
        );
    }
}

#[test]
fn an_absent_optional_file_is_a_warning_saying_what_is_lost() {
    let dir = scratch("linux-6.1-p1-before", &["pagetypeinfo"], |t| t);
    let s = ProcSnapshot::read_dir(dir.path()).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("pagetypeinfo: absent"),
        "{:?}",
        s.warnings
    );
    assert!(s.warnings[0].contains("Movable"), "{:?}", s.warnings);
    let s = ProcSnapshot::read_dir(&data("linux-6.1-p1-before")).unwrap();
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
}

#[test]
fn overlapping_zones_and_spans_past_the_pfn_space_are_refused() {
    // DMA32 (pfns 0x1000..) starting inside DMA (pfns 0x1..0x1000).
    let dir = zoneinfo_with("  start_pfn:           4096", "  start_pfn:           4000");
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert_eq!(err.line, 96, "{err}");
    let shown = err.to_string();
    assert!(
        shown.contains("Node 0, zone DMA32") && shown.contains("overlaps Node 0, zone DMA"),
        "{shown}"
    );
    // A start pfn near 2^64: `start_pfn + spanned` wrapped.
    let dir = zoneinfo_with(
        "  start_pfn:           4096",
        "  start_pfn:           18446744073709551000",
    );
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(err.to_string().contains("physical address space"), "{err}");
}

#[test]
fn absurd_zone_counts_are_refused_in_linear_time() {
    // 160k zone blocks, one per node: 37 s before the replay refused them.
    let block = std::fs::read_to_string(data("linux-6.1-p1-before").join("zoneinfo")).unwrap();
    let dma: String = block.lines().take(95).map(|l| format!("{l}\n")).collect();
    let mut text = String::new();
    for node in 0..160_000 {
        text.push_str(&dma.replacen("Node 0,", &format!("Node {node},"), 1));
        if text.len() > 7 << 20 {
            break;
        }
    }
    let t = std::time::Instant::now();
    let err = zonealloc_lab::procfs::parse_zoneinfo(&text).unwrap_err();
    assert!(t.elapsed().as_secs() < 10, "{:?}", t.elapsed());
    assert!(
        err.to_string()
            .contains("node 1024: node numbers are 0..=1023"),
        "{err}"
    );
}

#[test]
fn a_busy_machines_drift_is_a_warning_under_busy_and_an_error_otherwise() {
    // DMA32's `pages free` 500 below its free lists: beyond 4 x 30 drift and 252 moved pages.
    let dir = zoneinfo_with("pages free     422456", "pages free     421956");
    let err = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(err.to_string().contains("500 apart"), "{err}");
    let s = ProcSnapshot::read_dir_with(dir.path(), Tolerance::Busy).unwrap();
    assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
    assert!(
        s.warnings[0].contains("421956 free pages, but the free lists hold 422456"),
        "{:?}",
        s.warnings
    );
    assert!(s.warnings[0].contains("accepted"), "{:?}", s.warnings);
    let at = format!("{}:97: ", dir.path().join("zoneinfo").display());
    assert!(s.warnings[0].starts_with(&at), "{:?}", s.warnings);
}

#[test]
fn snapshots_of_different_kernels_or_zones_are_not_the_same_machine() {
    let a = ProcSnapshot::read_dir(&data("linux-6.1-p1-before")).unwrap();
    let b = ProcSnapshot::read_dir(&data("linux-7.2-p1-before")).unwrap();
    assert!(a.same_machine(&a).is_ok());
    let e = a.same_machine(&b).unwrap_err();
    assert!(
        e.contains("different kernels or machines: zoneinfo format"),
        "{e}"
    );
    let dir = zoneinfo_with("        spanned  520157", "        spanned  520158");
    let c = ProcSnapshot::read_dir(dir.path()).unwrap();
    let e = a.same_machine(&c).unwrap_err();
    assert!(
        e.contains("zone (name, start pfn, spanned, present)"),
        "{e}"
    );
    assert!(e.contains("520158"), "{e}");
}

#[test]
fn a_layout_beside_the_snapshot_is_read_and_checked_by_name_and_line() {
    let header = "# zonealloc pfn layout 1: start_pfn count class; max_order 10\n";
    let cases: [(&str, Option<(usize, &str)>); 4] = [
        ("0 1 R\n1 4095 B\n4096 520192 M\nend 524288\n", None),
        ("0 1 R\n1 4095 B\n4096 520192 M\n", Some((5, "cut short"))),
        (
            "0 1 R\n1 4095 B\n4096 10 M\nend 4106\n",
            Some((1, "inside Node 0, zone DMA32")),
        ),
        (
            "0 1 R\n1 4095 B\n4096 520192 Q\nend 524288\n",
            Some((4, "class letter")),
        ),
    ];
    for (runs, want) in cases {
        let text = format!("{header}{runs}");
        let dir = scratch("linux-6.1-p1-before", &[], |t| t);
        std::fs::write(dir.path().join("layout"), &text).unwrap();
        match (ProcSnapshot::read_dir(dir.path()), want) {
            (Ok(s), None) => {
                let l = s.layout.expect("the layout");
                assert_eq!((l.max_order, l.end), (10, 524288));
                assert_eq!(
                    l.free_per_order(1..4096, 10),
                    vec![1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3]
                );
            }
            (Err(e), Some((line, what))) => {
                assert_eq!((e.file, e.line), (ProcFile::Layout, line), "{e}");
                assert!(e.to_string().contains(what), "{e}");
                assert!(e.to_string().contains("/layout:"), "{e}");
            }
            (got, _) => panic!("{runs:?}: {:?}", got.map(|_| ())),
        }
    }
    // A layout of 9 orders beside a snapshot of 11.
    let dir = scratch("linux-6.1-p1-before", &[], |t| t);
    let text = "# zonealloc pfn layout 1: x; max_order 8\n0 524288 M\nend 524288\n";
    std::fs::write(dir.path().join("layout"), text).unwrap();
    let e = ProcSnapshot::read_dir(dir.path()).unwrap_err();
    assert!(e.to_string().contains("max_order 8"), "{e}");
}
