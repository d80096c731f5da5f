//! Unit tests of the snapshot reader on a small consistent snapshot, broken one way at a time;
//! every error's line is asserted.

use zonealloc::{MigrateType, ZoneType};

use super::*;

/// DMA populated (32 pfns, 30 managed, 14 free in blocks [2, 2, 2], PCP 3 + 1), Normal empty.
const ZONEINFO: &str = "\
Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 5
  pages free     14
        boost    0
        min      2
        low      3
        high     4
        spanned  32
        present  32
        managed  30
        cma      0
        protection: (0, 7)
      nr_free_pages 14
  pagesets
    cpu: 0
              count: 3
              high:  6
              batch: 1
  vm stats threshold: 2
    cpu: 1
              count: 1
              high:  6
              batch: 1
  vm stats threshold: 2
  node_unreclaimable:  0
  start_pfn:           0
Node 0, zone   Normal
  pages free     0
        boost    0
        min      0
        low      0
        high     0
        spanned  0
        present  0
        managed  0
        cma      0
        protection: (0, 0)
";

const PAGETYPEINFO: &str = "\
Page block order: 1
Pages per block:  2

Free pages count per migrate type at order       0      1      2 
Node    0, zone      DMA, type    Unmovable      1      0      0 
Node    0, zone      DMA, type      Movable      1      2      2 
Node    0, zone      DMA, type  Reclaimable      0      0      0 
Node    0, zone      DMA, type   HighAtomic      0      0      0 
Node    0, zone      DMA, type      Isolate      0      0      0 

Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic      Isolate 
Node 0, zone      DMA            2           14            0            0            0 
";

const BUDDYINFO: &str = "Node 0, zone      DMA      2      2      2 \n";

/// `text` with line `line` (1-based) replaced by `with`.
fn edit(text: &str, line: usize, with: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines[line - 1] = with;
    lines.join("\n") + "\n"
}

/// The first `n` lines of `text`.
fn head(text: &str, n: usize) -> String {
    text.lines().take(n).collect::<Vec<_>>().join("\n")
}

fn parse_all(z: &str, p: &str, b: &str) -> Result<ProcSnapshot, ProcError> {
    ProcSnapshot::parse(z, Some(p), Some(b))
}

/// Asserts an error's file and line and returns its kind.
fn fails_at(r: Result<ProcSnapshot, ProcError>, file: ProcFile, line: usize) -> ErrorKind {
    let e = r.expect_err("the snapshot should be rejected");
    assert_eq!((e.file, e.line), (file, line), "{e}");
    e.kind
}

#[test]
fn fixture_reads_with_every_field() {
    let s = parse_all(ZONEINFO, PAGETYPEINFO, BUDDYINFO).unwrap();
    assert_eq!(s.format, ZoneinfoFormat::Pre6_7);
    assert_eq!(s.cpus, [0, 1]);
    assert_eq!(s.orders, 3);
    assert_eq!(s.pageblock_order, Some(1));
    assert!(s.skews.is_empty());
    assert_eq!(s.unpopulated.len(), 1);
    assert_eq!(s.unpopulated[0].zone, ZoneType::Normal);
    assert_eq!(s.node_counters[&0]["nr_inactive_anon"], 5);
    let z = &s.zones[0];
    assert_eq!(z.zone, ZoneType::Dma);
    assert_eq!(z.protection, [(ZoneType::Dma, 0), (ZoneType::Normal, 7)]);
    assert_eq!(z.buddy_free_pages(), Some(14));
    assert_eq!(z.pcp_pages(), 4);
    assert_eq!(z.used_pages(), Some(30 - 14 - 4));
    let area = z.free_area.as_ref().unwrap();
    assert_eq!(area.free[MigrateType::Movable.index()][2].blocks, 2);
    assert_eq!(area.pageblocks, [2, 14, 0, 0, 0]);
}

#[test]
fn high_min_and_high_max_make_the_6_7_format() {
    let z = ZONEINFO
        .replace(
            "batch: 1\n",
            "batch: 1\n              high_min: 6\n              high_max: 9\n",
        )
        .replace(
            "        high     4\n",
            "        high     4\n        promo    5\n",
        );
    let s = parse_all(&z, PAGETYPEINFO, BUDDYINFO).unwrap();
    assert_eq!(s.format, ZoneinfoFormat::HighMinMax);
    assert!(s.features.promo && s.features.high_min_max);
    assert_eq!(s.zones[0].pagesets[1].high_max, Some(9));
    assert_eq!(s.zones[0].watermarks.promo, Some(5));
    assert_eq!(infer_format(&z).unwrap(), ZoneinfoFormat::HighMinMax);
    assert_eq!(infer_format(ZONEINFO).unwrap(), ZoneinfoFormat::Pre6_7);
}

#[test]
fn high_min_without_high_max_is_rejected_at_its_cpu() {
    let z = edit(
        ZONEINFO,
        19,
        "              batch: 1\n              high_min: 6",
    );
    // The inserted line shifts nothing above it: cpu 0 opens at line 16.
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        16,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
}

#[test]
fn truncated_zoneinfo_names_the_missing_field_where_it_ends() {
    let z = head(ZONEINFO, 10);
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        11,
    );
    assert!(matches!(
        kind,
        ErrorKind::MissingField {
            field: "managed",
            ..
        }
    ));
    // Cut inside the pagesets: cpu 1 has no `high` yet, and the zone no `start_pfn`.
    let z = head(ZONEINFO, 22);
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        23,
    );
    assert!(matches!(
        kind,
        ErrorKind::MissingField {
            field: "start_pfn",
            ..
        }
    ));
    let kind = fails_at(
        parse_all("", PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        1,
    );
    assert!(matches!(kind, ErrorKind::UnexpectedEnd { .. }));
}

#[test]
fn populated_zone_without_pagesets_is_rejected() {
    let z = head(ZONEINFO, 14);
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        15,
    );
    assert!(matches!(
        kind,
        ErrorKind::MissingField {
            field: "pagesets",
            ..
        }
    ));
}

#[test]
fn truncated_pagetypeinfo_and_buddyinfo_end_early() {
    let p = head(PAGETYPEINFO, 7);
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        8,
    );
    assert!(matches!(kind, ErrorKind::UnexpectedEnd { .. }));
    // Two lines and a blank one: the file ends after line 2.
    let p = head(PAGETYPEINFO, 3);
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        3,
    );
    assert!(matches!(kind, ErrorKind::UnexpectedEnd { .. }));
    let kind = fails_at(
        parse_all(ZONEINFO, PAGETYPEINFO, ""),
        ProcFile::Buddyinfo,
        1,
    );
    assert!(matches!(kind, ErrorKind::UnexpectedEnd { .. }));
}

#[test]
fn bad_numbers_name_field_and_line() {
    let z = edit(ZONEINFO, 6, "        min      2x");
    let r = parse_all(&z, PAGETYPEINFO, BUDDYINFO);
    assert_eq!(
        r.as_ref().unwrap_err().to_string(),
        "zoneinfo:6: `min`: `2x` is not a valid number"
    );
    assert!(matches!(
        fails_at(r, ProcFile::Zoneinfo, 6),
        ErrorKind::BadNumber { .. }
    ));
    let z = edit(ZONEINFO, 17, "              count: -3");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        17,
    );
    assert!(matches!(kind, ErrorKind::BadNumber { .. }));
    let z = edit(ZONEINFO, 13, "        protection: (0, x)");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        13,
    );
    assert!(matches!(kind, ErrorKind::BadNumber { .. }));
    let p = edit(
        PAGETYPEINFO,
        6,
        "Node    0, zone      DMA, type      Movable      1    two      2 ",
    );
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        6,
    );
    assert!(matches!(kind, ErrorKind::BadNumber { .. }));
    let b = "Node 0, zone      DMA      2      2      2.5 \n";
    let kind = fails_at(parse_all(ZONEINFO, PAGETYPEINFO, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::BadNumber { .. }));
}

#[test]
fn unknown_zones_are_rejected() {
    let z = edit(ZONEINFO, 28, "Node 0, zone    Weird");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        28,
    );
    assert!(matches!(kind, ErrorKind::UnknownZone { name } if name == "Weird"));
    let b = "Node 0, zone  HighMemX      2      2      2 \n";
    let kind = fails_at(parse_all(ZONEINFO, PAGETYPEINFO, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::UnknownZone { .. }));
}

#[test]
fn zones_must_match_across_files() {
    // Normal is unpopulated in zoneinfo, so buddyinfo cannot list it.
    let b = format!("{BUDDYINFO}Node 0, zone   Normal      0      0      0 \n");
    let kind = fails_at(
        parse_all(ZONEINFO, PAGETYPEINFO, &b),
        ProcFile::Buddyinfo,
        2,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    // A zone of a node zoneinfo does not have.
    let b = "Node 1, zone      DMA      2      2      2 \n";
    let kind = fails_at(parse_all(ZONEINFO, PAGETYPEINFO, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let b = "Node 0, zone      DMA      2      2 \n";
    let kind = fails_at(parse_all(ZONEINFO, PAGETYPEINFO, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
}

#[test]
fn buddyinfo_and_pagetypeinfo_totals_must_agree() {
    // One order-0 page more in buddyinfo: within one PCP batch per CPU (2 pages) under the
    // live tolerance, and recorded; rejected under the exact one.
    let b = "Node 0, zone      DMA      3      2      2 \n";
    let s = parse_all(ZONEINFO, PAGETYPEINFO, b).unwrap();
    assert_eq!(s.skews.len(), 1);
    assert_eq!(s.skews[0].pages, 1);
    assert_eq!(
        s.skews[0].files,
        (ProcFile::Pagetypeinfo, ProcFile::Buddyinfo)
    );
    let r = ProcSnapshot::parse_with(ZONEINFO, Some(PAGETYPEINFO), Some(b), Tolerance::Exact);
    let kind = fails_at(r, ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    // Three order-1 blocks more (6 pages) is beyond any tolerance here.
    let b = "Node 0, zone      DMA      2      5      2 \n";
    let kind = fails_at(parse_all(ZONEINFO, PAGETYPEINFO, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::Inconsistent { what } if what.contains("order 1")));
}

#[test]
fn capped_pagetypeinfo_counts_are_lower_bounds() {
    // `>100000` Movable order-0 blocks: buddyinfo's larger total is accepted, a smaller one
    // is not.
    let p = edit(
        PAGETYPEINFO,
        6,
        "Node    0, zone      DMA, type      Movable >100000      2      2 ",
    );
    let z = ZONEINFO
        .replace("pages free     14", "pages free     100013")
        .replace("nr_free_pages 14", "nr_free_pages 100013")
        .replace("spanned  32", "spanned  200000")
        .replace("present  32", "present  200000")
        .replace("managed  30", "managed  200000");
    let b = "Node 0, zone      DMA 100001      2      2 \n";
    let s = parse_all(&z, &p, b).unwrap();
    let area = s.zones[0].free_area.as_ref().unwrap();
    assert_eq!(
        area.free[MigrateType::Movable.index()][0],
        FreeCount {
            blocks: 100_000,
            capped: true
        }
    );
    assert_eq!(s.zones[0].free_blocks().unwrap()[0], 100_001);
    let b = "Node 0, zone      DMA  99990      2      2 \n";
    let kind = fails_at(parse_all(&z, &p, b), ProcFile::Buddyinfo, 1);
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
}

#[test]
fn free_pages_must_match_the_free_lists_within_drift() {
    // 24 free pages against 14 on the lists: 10 apart, drift 2 x 2, live tolerance 2.
    let z = ZONEINFO.replace("pages free     14", "pages free     24");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        4,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    // 18 is within drift (4): accepted without skew even under the exact tolerance.
    let z = ZONEINFO.replace("pages free     14", "pages free     18");
    let s = ProcSnapshot::parse_with(&z, Some(PAGETYPEINFO), Some(BUDDYINFO), Tolerance::Exact)
        .unwrap();
    assert!(s.skews.is_empty());
}

#[test]
fn more_pageblocks_than_the_span_holds_are_rejected() {
    let p = edit(
        PAGETYPEINFO,
        12,
        "Node 0, zone      DMA            2           15            0            0            0 ",
    );
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        12,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
}

#[test]
fn pagetypeinfo_header_and_columns_are_checked() {
    let p = edit(PAGETYPEINFO, 2, "Pages per block:  4");
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        2,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let p = edit(
        PAGETYPEINFO,
        11,
        "Number of blocks type     Unmovable      Movable  Reclaimable   HighAtomic ",
    );
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        11,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let p = edit(PAGETYPEINFO, 1, "Page block size: 1");
    let kind = fails_at(
        parse_all(ZONEINFO, &p, BUDDYINFO),
        ProcFile::Pagetypeinfo,
        1,
    );
    assert!(matches!(kind, ErrorKind::Unexpected { .. }));
}

#[test]
fn unknown_migratetypes_are_kept_by_name() {
    let p = PAGETYPEINFO
        .replace("   HighAtomic      0", "      Reserve      0")
        .replace("   HighAtomic ", "      Reserve ");
    let s = parse_all(ZONEINFO, &p, BUDDYINFO).unwrap();
    assert_eq!(
        s.migratetypes[3],
        MigrateTypeName::Other("Reserve".to_owned())
    );
    assert_eq!(s.migratetypes[4].known(), Some(MigrateType::Isolate));
}

#[test]
fn zoneinfo_internal_contradictions_are_rejected() {
    let z = edit(ZONEINFO, 6, "        min      5");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        6,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let z = edit(ZONEINFO, 13, "        protection: (0, 7, 0)");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        13,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let z = edit(ZONEINFO, 7, "        min      2");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        7,
    );
    assert!(matches!(kind, ErrorKind::Duplicate { .. }));
    let z = edit(ZONEINFO, 11, "        managed  40");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        11,
    );
    assert!(matches!(kind, ErrorKind::Inconsistent { .. }));
    let z = edit(ZONEINFO, 17, "              cnt: 3");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        17,
    );
    assert!(matches!(kind, ErrorKind::Unexpected { .. }));
    let z = format!("garbage\n{ZONEINFO}");
    let kind = fails_at(
        parse_all(&z, PAGETYPEINFO, BUDDYINFO),
        ProcFile::Zoneinfo,
        1,
    );
    assert!(matches!(kind, ErrorKind::Unexpected { .. }));
}

#[test]
fn a_free_list_file_is_required() {
    let r = ProcSnapshot::parse(ZONEINFO, None, None);
    assert!(matches!(
        r.unwrap_err().kind,
        ErrorKind::UnexpectedEnd { .. }
    ));
}

#[test]
fn pagetypeinfo_reads_one_block_per_node_and_skips_mixed_counts() {
    let node1 = PAGETYPEINFO
        .replace("Node    0", "Node    1")
        .replace("Node 0", "Node 1");
    let mixed = "\nNumber of mixed blocks    Unmovable      Movable  Reclaimable   HighAtomic      Isolate \n\
                 Node 0, zone      DMA            0            1            0            0            0 \n";
    let text = format!("{PAGETYPEINFO}{mixed}{node1}");
    let p = parse_pagetypeinfo(&text).unwrap();
    let zones: Vec<_> = p
        .zones
        .iter()
        .map(|z| (z.node, z.zone, z.blocks_line))
        .collect();
    assert_eq!(zones, [(0, ZoneType::Dma, 12), (1, ZoneType::Dma, 27)]);
    // A second node's block must agree on the page block order.
    let other = node1
        .replace("order: 1", "order: 2")
        .replace("block:  2", "block:  4");
    let e = parse_pagetypeinfo(&format!("{PAGETYPEINFO}{other}")).unwrap_err();
    assert_eq!((e.file, e.line), (ProcFile::Pagetypeinfo, 17), "{e}");
    assert!(matches!(e.kind, ErrorKind::Inconsistent { .. }));
}
