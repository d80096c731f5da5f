//! `workqueue:workqueue_execute_start` (`capture-kmem --workqueue`): the vmstat workers'
//! and the shepherd's runs, in each tool's form; any other work function is skipped.

use super::*;

#[test]
fn the_vmstat_workers_runs_in_each_tools_form() {
    let lines = [
        // ftrace
        "     kworker/1:1-28308   [001] ..... 18857.084382: workqueue_execute_start: work struct 00000000c6de8d02: function vmstat_update",
        // perf script
        "     kworker/1:1 28308 [001] 18857.084382: workqueue:workqueue_execute_start: work struct 0xffff88813bd2a1c0: function vmstat_update",
        // trace-cmd report
        "     kworker/1:1-28308 [001] 18857.084382: workqueue_execute_start: work struct 0xffff88813bd2a1c0: function vmstat_update",
    ];
    for line in lines {
        let ev = one(line);
        assert_eq!(ev.kind, EventKind::VmstatUpdate, "{line}");
        assert_eq!((ev.cpu, ev.ts_ns), (Some(1), Some(18_857_084_382_000)));
        assert_eq!(ev.kind.name(), "workqueue_execute_start");
        assert!(ev.kind.is_work() && ev.kind.pfn() == 0);
    }
    let ev = one("kworker/0:0-24723 [000] ..... 18857.084376: workqueue_execute_start: work struct 000000005e0e1e25: function vmstat_shepherd");
    assert_eq!((ev.kind, ev.cpu), (EventKind::VmstatShepherd, Some(0)));
}

#[test]
fn other_work_functions_are_other_events() {
    let mut p = Parser::new();
    for f in ["flush_to_ldisc", "0xffffffff815bc070"] {
        let line = format!(
            "kworker/0:0-24723 [000] ..... 18857.1: workqueue_execute_start: work struct 000000005e0e1e25: function {f}"
        );
        assert!(p.feed(line.as_bytes()).is_none(), "{f}");
    }
    assert!(p
        .feed(b"kworker/0:0-24723 [000] ..... 18857.1: workqueue_execute_start: work struct 0:")
        .is_none());
    assert_eq!((p.other, p.malformed, p.events), (2, 1, 0));
}
