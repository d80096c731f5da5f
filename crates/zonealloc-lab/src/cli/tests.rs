#[test]
fn seconds_parse_to_nanoseconds_and_junk_is_refused() {
    assert_eq!(super::parse_seconds("22.171788"), Ok(22_171_788_000));
    assert_eq!(super::parse_seconds("3"), Ok(3_000_000_000));
    assert_eq!(super::parse_seconds(".5"), Ok(500_000_000));
    for bad in [
        "",
        ".",
        "-1",
        "1.2.3",
        "1e3",
        "1.0000000001",
        "99999999999999999999",
    ] {
        assert!(super::parse_seconds(bad).is_err(), "{bad}");
    }
}
use super::*;

#[test]
fn infer_takes_on_off_and_named_items() {
    assert_eq!(parse_infer("on"), Ok(Infer::All(true)));
    assert_eq!(parse_infer("start-count=on"), Ok(Infer::StartCount(true)));
    assert_eq!(parse_infer("lists=off"), Ok(Infer::Lists(false)));
    assert_eq!(parse_infer("layout-roll=off"), Ok(Infer::LayoutRoll(false)));
    assert!(parse_infer("start-count=maybe")
        .unwrap_err()
        .contains("on or off"));
    assert!(parse_infer("drains=on")
        .unwrap_err()
        .contains("start-count, lists"));
    let cli = Cli::try_parse_from([
        "zonealloc",
        "trace",
        "replay",
        "t.txt",
        "--infer",
        "off,start-count=on",
    ])
    .unwrap();
    let TopCommand::Run(Command::Trace(TraceCommand::Replay(args))) = cli.command else {
        panic!("not a replay");
    };
    assert_eq!(args.infer, [Infer::All(false), Infer::StartCount(true)]);
}

fn lab_args(extra: &[&str]) -> Result<LabArgs, clap::Error> {
    let cli = Cli::try_parse_from(["zonealloc", "lab"].iter().chain(extra))?;
    let TopCommand::Run(Command::Lab(args)) = cli.command else {
        panic!("not a lab run");
    };
    Ok(args)
}

#[test]
fn lab_nodes_default_to_one_and_take_one_to_eight() {
    assert_eq!(lab_args(&["drain"]).unwrap().nodes, 1);
    let a = lab_args(&["drain", "--nodes", "2", "--quick"]).unwrap();
    assert_eq!((a.nodes, a.quick), (2, true));
    assert_eq!(a.experiment.as_deref(), Some("drain"));
    assert_eq!(lab_args(&["--nodes=8"]).unwrap().nodes, 8);
    for bad in ["0", "9", "two", "-1"] {
        assert!(lab_args(&["--nodes", bad]).is_err(), "{bad}");
    }
}
