//! `nodes/nodeN/{cpulist,distance,numastat}`: a NUMA machine's nodes as `capture-kmem` saves
//! them from `/sys/devices/system/node/nodeN/` (`drivers/base/node.c`): which CPUs each node
//! has (`cpulist`, `cpumap_print_list_to_buf`: ranges such as `0-1,4`), its row of the
//! distance table (`distance`, `node_read_distance`: one number per online node) and its
//! node counters (`numastat`, `node_read_numastat`: `numa_hit N` lines).
//!
//! A snapshot without `nodes/` (a kernel without NUMA, or an older capture) has no nodes
//! here; the replay then takes every CPU as node 0's.

use std::path::Path;

use zonealloc::numa::NumaStat;

use super::error::{ErrorKind, ProcError, ProcFile};
use super::read::read_file;
use super::{MAX_CPUS, MAX_NODES};

/// One node's `/sys/devices/system/node/nodeN` files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeSnapshot {
    /// `N`.
    pub id: u32,
    /// The CPUs of the node (`cpulist`), increasing.
    pub cpus: Vec<u32>,
    /// Its row of the distance table (`distance`), one entry per node in id order.
    pub distance: Vec<u32>,
    /// `numastat`, where saved.
    pub numastat: Option<NumaStat>,
}

/// A node's counters as `numastat` prints them (`node_read_numastat`, the same six lines
/// in 6.1 and 7.2), `(name, value)` in the file's order.
pub fn numastat_fields(s: &NumaStat) -> [(&'static str, u64); 6] {
    [
        ("numa_hit", s.numa_hit),
        ("numa_miss", s.numa_miss),
        ("numa_foreign", s.numa_foreign),
        ("interleave_hit", s.interleave_hit),
        ("local_node", s.local_node),
        ("other_node", s.other_node),
    ]
}

/// `after - before`, each counter (0 where it went down: a counter that wrapped or a
/// snapshot pair out of order).
pub fn numastat_since(after: &NumaStat, before: &NumaStat) -> NumaStat {
    let d = |a: u64, b: u64| a.saturating_sub(b);
    NumaStat {
        numa_hit: d(after.numa_hit, before.numa_hit),
        numa_miss: d(after.numa_miss, before.numa_miss),
        numa_foreign: d(after.numa_foreign, before.numa_foreign),
        interleave_hit: d(after.interleave_hit, before.interleave_hit),
        local_node: d(after.local_node, before.local_node),
        other_node: d(after.other_node, before.other_node),
    }
}

/// Reads `dir/nodes/nodeN/` for every `N` there; none when `dir/nodes` is absent. Each
/// node needs `cpulist` and `distance`; `numastat` is optional. Checked: node ids below
/// [`MAX_NODES`], each distance row one entry per node, no CPU in two nodes.
pub fn read_nodes(dir: &Path) -> Result<Vec<NodeSnapshot>, ProcError> {
    let root = dir.join("nodes");
    let err = |path: &Path, line: usize, kind: ErrorKind| ProcError {
        file: ProcFile::Nodes,
        path: path.to_owned(),
        line,
        kind,
    };
    let entries = match std::fs::read_dir(&root) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(err(&root, 0, ErrorKind::Io(e))),
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| err(&root, 0, ErrorKind::Io(e)))?;
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix("node"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue; // has_cpu, online, possible, ...
        };
        if id >= MAX_NODES {
            return Err(err(
                &entry.path(),
                0,
                ErrorKind::Inconsistent {
                    what: format!("node {id}: node ids are below {MAX_NODES}"),
                },
            ));
        }
        ids.push(id);
    }
    ids.sort_unstable();
    let mut nodes = Vec::with_capacity(ids.len());
    for id in ids {
        let d = root.join(format!("node{id}"));
        let need = |f: &str| -> Result<(std::path::PathBuf, String), ProcError> {
            let p = d.join(f);
            match read_file(&p, ProcFile::Nodes) {
                Ok(Some(t)) => Ok((p, t)),
                Ok(None) => Err(err(
                    &p,
                    0,
                    ErrorKind::Io(std::io::ErrorKind::NotFound.into()),
                )),
                Err(e) => Err(e),
            }
        };
        let (p, text) = need("cpulist")?;
        let cpus = parse_cpulist(&text).map_err(|k| err(&p, 1, k))?;
        let (p, text) = need("distance")?;
        let distance = parse_distance(&text).map_err(|k| err(&p, 1, k))?;
        let p = d.join("numastat");
        let numastat = match read_file(&p, ProcFile::Nodes)? {
            Some(t) => Some(parse_numastat(&t).map_err(|(line, k)| err(&p, line, k))?),
            None => None,
        };
        nodes.push(NodeSnapshot {
            id,
            cpus,
            distance,
            numastat,
        });
    }
    check_nodes(&nodes).map_err(|what| err(&root, 0, ErrorKind::Inconsistent { what }))?;
    Ok(nodes)
}

/// The nodes agree with each other: one distance per node, no CPU twice.
fn check_nodes(nodes: &[NodeSnapshot]) -> Result<(), String> {
    let mut seen = std::collections::HashMap::new();
    for n in nodes {
        if n.distance.len() != nodes.len() {
            return Err(format!(
                "node{}/distance has {} entries for {} nodes",
                n.id,
                n.distance.len(),
                nodes.len()
            ));
        }
        for &c in &n.cpus {
            if let Some(other) = seen.insert(c, n.id) {
                return Err(format!("CPU {c} is in node{other} and node{}", n.id));
            }
        }
    }
    Ok(())
}

/// A `cpulist`: comma-separated CPUs and `a-b` ranges, or an empty line (a node without
/// CPUs). CPU ids below [`MAX_CPUS`].
pub fn parse_cpulist(text: &str) -> Result<Vec<u32>, ErrorKind> {
    let line = text.trim();
    let bad = || ErrorKind::Unexpected {
        expected: "a CPU list such as 0-1,4",
        found: line.chars().take(80).collect(),
    };
    let mut cpus = Vec::new();
    if line.is_empty() {
        return Ok(cpus);
    }
    for part in line.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let (Ok(a), Ok(b)) = (a.trim().parse::<u32>(), b.trim().parse::<u32>()) else {
            return Err(bad());
        };
        if a > b || b >= MAX_CPUS {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// A `distance` row: numbers separated by spaces, at most [`MAX_NODES`] of them.
pub fn parse_distance(text: &str) -> Result<Vec<u32>, ErrorKind> {
    let line = text.trim();
    let row: Result<Vec<u32>, _> = line.split_whitespace().map(str::parse::<u32>).collect();
    match row {
        Ok(r) if !r.is_empty() && r.len() <= MAX_NODES as usize => Ok(r),
        _ => Err(ErrorKind::Unexpected {
            expected: "node distances such as 10 20",
            found: line.chars().take(80).collect(),
        }),
    }
}

/// A `numastat` file: `name value` lines; the six counters required, others ignored (a
/// later kernel may print more).
pub fn parse_numastat(text: &str) -> Result<NumaStat, (usize, ErrorKind)> {
    let mut s = NumaStat::default();
    let mut found = [false; 6];
    for (i, line) in text.lines().enumerate() {
        let Some((name, value)) = line.trim().split_once(' ') else {
            continue;
        };
        let slot = match name {
            "numa_hit" => (0, &mut s.numa_hit),
            "numa_miss" => (1, &mut s.numa_miss),
            "numa_foreign" => (2, &mut s.numa_foreign),
            "interleave_hit" => (3, &mut s.interleave_hit),
            "local_node" => (4, &mut s.local_node),
            "other_node" => (5, &mut s.other_node),
            _ => continue,
        };
        *slot.1 = value.trim().parse().map_err(|_| {
            (
                i + 1,
                ErrorKind::BadNumber {
                    field: name.to_owned(),
                    text: value.trim().chars().take(40).collect(),
                },
            )
        })?;
        found[slot.0] = true;
    }
    if let Some(i) = found.iter().position(|f| !f) {
        return Err((
            text.lines().count() + 1,
            ErrorKind::UnexpectedEnd {
                expected: format!("a {} line", numastat_fields(&s)[i].0),
            },
        ));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists_take_ranges_and_lists_and_refuse_the_rest() {
        assert_eq!(parse_cpulist("0-1\n").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpulist("0,2-3,8").unwrap(), vec![0, 2, 3, 8]);
        assert_eq!(parse_cpulist("\n").unwrap(), Vec::<u32>::new());
        for bad in ["3-1", "a", "0-", "0-99999999", "1,,2"] {
            assert!(parse_cpulist(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numastat_needs_its_six_counters() {
        let text = "numa_hit 5\nnuma_miss 1\nnuma_foreign 2\ninterleave_hit 0\nlocal_node 4\nother_node 2\n";
        let s = parse_numastat(text).unwrap();
        assert_eq!((s.numa_hit, s.numa_foreign, s.other_node), (5, 2, 2));
        let short = parse_numastat("numa_hit 5\n").unwrap_err();
        assert!(format!("{:?}", short.1).contains("numa_miss"));
        let bad = parse_numastat("numa_hit x\n").unwrap_err();
        assert_eq!(bad.0, 1);
        let later = NumaStat { numa_hit: 9, ..s };
        assert_eq!(numastat_since(&later, &s).numa_hit, 4);
        assert_eq!(numastat_since(&s, &later).numa_hit, 0);
    }

    #[test]
    fn a_two_node_capture_reads_and_bad_folders_are_refused() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/kernel-own/7.2-4g-2node/p_crossnode/before"
        );
        let nodes = read_nodes(Path::new(dir)).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(
            (nodes[0].cpus.clone(), nodes[1].cpus.clone()),
            (vec![0, 1], vec![2, 3])
        );
        assert_eq!(nodes[1].distance, vec![20, 10]);
        assert!(nodes[0].numastat.unwrap().numa_hit > 0);
        // No nodes/ folder: no nodes.
        let empty = tempfile::tempdir().unwrap();
        assert!(read_nodes(empty.path()).unwrap().is_empty());
        // A CPU in two nodes, a short distance row.
        let t = tempfile::tempdir().unwrap();
        for (n, cpus, dist) in [(0, "0-1", "10 20"), (1, "1", "20")] {
            let d = t.path().join(format!("nodes/node{n}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cpulist"), cpus).unwrap();
            std::fs::write(d.join("distance"), dist).unwrap();
        }
        let e = read_nodes(t.path()).unwrap_err().to_string();
        assert!(e.contains("node1/distance has 1 entries"), "{e}");
        std::fs::write(t.path().join("nodes/node1/distance"), "20 10").unwrap();
        let e = read_nodes(t.path()).unwrap_err().to_string();
        assert!(e.contains("CPU 1 is in node0 and node1"), "{e}");
    }
}
