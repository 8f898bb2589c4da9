use super::*;

/// The registered analysis by hand over the shared test context: kernels launched at 0
/// (corr 1, under `step`), 5 (corr 2, under `step` and the op range), 8 (corr 3, `step`)
/// and 30 (corr 4, no range); durations 100, 100, 80, 100 ns.
#[test]
fn the_analysis_by_hand() {
    use crate::scope::DeviceSel;
    let ctx = crate::analysis::tests::ctx();
    let get = |ev: &Evidence, f: &str| ev.value(f).and_then(|v| v.as_i64());
    let ev = run(&Params::new(DeviceSel::All), &ctx).unwrap();
    assert_eq!(get(&ev, "selected_kernels"), Some(4));
    assert_eq!(get(&ev, "selected_kernel_ns"), Some(380));
    // Innermost: step gets kernels 1 and 3 (180 ns), aten::mm kernel 2 (100 ns).
    assert_eq!((get(&ev, "kernels"), get(&ev, "kernel_ns")), (Some(3), Some(280)));
    assert_eq!(get(&ev, "no_enclosing_range"), Some(1));
    let share = ev.field("kernel_share").unwrap().unwrap();
    assert_eq!((share.num, share.den), (14, 19)); // 280 / 380
    let row = |name: &str| {
        ev.rows.as_ref().unwrap().to_maps().into_iter().find(|r| r["name"] == name).unwrap()
    };
    assert_eq!(
        (row("step")["kernels"].as_i64(), row("step")["kernel_ns"].as_i64()),
        (Some(2), Some(180))
    );
    // The op range's PyTorch suffix is dropped by default.
    assert_eq!(row("aten::mm")["kernel_ns"].as_i64(), Some(100));
    assert_eq!((get(&ev, "ranges"), get(&ev, "range_ns")), (Some(2), Some(25)));
    // Only `step` kept: every kernel it encloses is its own, whatever lies inside it.
    let mut p = Params::new(DeviceSel::All);
    p.exact = Some("step".into());
    let ev = run(&p, &ctx).unwrap();
    assert_eq!((get(&ev, "kernels"), get(&ev, "kernel_ns")), (Some(3), Some(280)));
    assert_eq!((get(&ev, "ranges"), get(&ev, "range_median_ns")), (Some(1), Some(20)));
}
use proptest::prelude::*;

/// Thread 1 and 2 of process 7, thread 1 of process 8.
const T1: i64 = (7 << 24) | 1;
const T2: i64 = (7 << 24) | 2;
const U1: i64 = (8 << 24) | 1;

#[test]
fn pytorch_suffixes_are_stripped_and_nothing_else() {
    let r = NameRule::StripPytorchIds;
    assert_eq!(r.apply("aten::mm, seq = 12, op_id = 345"), "aten::mm");
    assert_eq!(r.apply("aten::mm, op_id = 9"), "aten::mm");
    assert_eq!(r.apply("aten::mm, seq = 3"), "aten::mm");
    assert_eq!(
        r.apply("aten::mm, seq = 1, op_id = 2, sizes = [[2, 3], [3, 4]]"),
        "aten::mm, sizes = [[2, 3], [3, 4]]"
    );
    // Not of the exact form: kept.
    assert_eq!(r.apply("x, seq = abc"), "x, seq = abc");
    assert_eq!(r.apply("x, seq = 5x"), "x, seq = 5x");
    assert_eq!(r.apply("x, seq = "), "x, seq = ");
    assert_eq!(r.apply("op_id = 5"), "op_id = 5");
    assert_eq!(r.apply("x,seq = 5"), "x,seq = 5");
    assert_eq!(r.apply("ncclAllReduce"), "ncclAllReduce");
    assert!(matches!(r.apply("ncclAllReduce"), Cow::Borrowed(_)));
    assert_eq!(NameRule::Verbatim.apply("a, op_id = 1"), "a, op_id = 1");
}

#[test]
fn stats_group_normalised_names_with_lower_median_and_nearest_rank_p90() {
    let mut rows: Vec<(i64, i64, Option<i64>, String, i64)> = (1..=10)
        .map(|d| (T1, d * 100, Some(d * 100 + d), format!("aten::mm, seq = {d}, op_id = {d}"), 0))
        .collect();
    rows.push((T1, 5000, Some(5007), "step".into(), 1));
    let rows: Vec<(i64, i64, Option<i64>, &str, i64)> =
        rows.iter().map(|r| (r.0, r.1, r.2, r.3.as_str(), r.4)).collect();
    let ranges = NvtxRanges::from_rows(&rows);
    let s = range_stats(&ranges, &StatsParams::default()).unwrap();
    assert_eq!(s.ranges, 11);
    assert_eq!(s.rows.len(), 2);
    let mm = &s.rows[0];
    assert_eq!(mm.name, "aten::mm");
    assert_eq!(
        (mm.count, mm.total_ns, mm.min_ns, mm.median_ns, mm.p90_ns, mm.max_ns),
        (10, 55, 1, 5, 9, 10)
    );
    assert_eq!(mm.variants, 10);
    assert_eq!(mm.domains, ["default"]);
    assert_eq!(s.rows[1].domains, ["domain #1"]);

    let verbatim = StatsParams { rule: NameRule::Verbatim, ..StatsParams::default() };
    assert_eq!(range_stats(&ranges, &verbatim).unwrap().rows.len(), 11);

    let only = |filter: RangeFilter| {
        range_stats(&ranges, &StatsParams { filter, ..StatsParams::default() })
            .unwrap()
            .rows
            .iter()
            .map(|r| r.name.clone())
            .collect::<Vec<_>>()
    };
    let name = |m: NameMatch| RangeFilter { name: Some(m), ..RangeFilter::default() };
    assert_eq!(only(name(NameMatch::Exact("step".into()))), ["step"]);
    assert_eq!(only(name(NameMatch::Exact("aten::mm, seq = 1, op_id = 1".into()))), [""; 0]);
    assert_eq!(only(name(NameMatch::Substring("mm".into()))), ["aten::mm"]);
    assert_eq!(only(name(NameMatch::regex("^st").unwrap())), ["step"]);
    assert!(matches!(NameMatch::regex("("), Err(NvtxError::BadRegex { .. })));
    let dom = |d: DomainSel| RangeFilter { domains: Some(vec![d]), ..RangeFilter::default() };
    assert_eq!(only(dom(DomainSel::Id(1))), ["step"]);
    assert_eq!(only(dom(DomainSel::Name("default".into()))), ["aten::mm"]);
    let pid = RangeFilter { pids: Some(vec![8]), ..RangeFilter::default() };
    assert!(only(pid).is_empty());
    let tid = RangeFilter { tids: Some(vec![1]), ..RangeFilter::default() };
    assert_eq!(only(tid).len(), 2);
}

#[test]
fn stats_window_clips_or_contains() {
    let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(100), "a", 0), (T1, 40, Some(60), "a", 0)]);
    let w = Some(Window { start_ns: 50, end_ns: 200 });
    let clip = range_stats(&ranges, &StatsParams { window: w, ..StatsParams::default() }).unwrap();
    assert_eq!((clip.rows[0].count, clip.rows[0].total_ns, clip.clipped), (2, 60, 2));
    let contain =
        StatsParams { window: w, semantics: Semantics::Contain, ..StatsParams::default() };
    assert!(range_stats(&ranges, &contain).unwrap().rows.is_empty());
}

/// Kernels on device 0, one per launch, each 10 ns long at 1000 + 100 i; launch i has
/// correlation id i on thread `threads[i]` at time `launch_at[i]`.
fn setup(threads: &[i64], launch_at: &[i64]) -> (Kernels, Launches) {
    let rows: Vec<(i64, i64, i64, i64, &str)> =
        (0..launch_at.len() as i64).map(|i| (0, 7, 1000 + 100 * i, 1010 + 100 * i, "k")).collect();
    let keys: Vec<(Option<i64>, Option<i64>)> =
        threads.iter().enumerate().map(|(i, &t)| (Some(t >> 24), Some(i as i64))).collect();
    let launches: Vec<(i64, i64, i64, i64)> = threads
        .iter()
        .zip(launch_at)
        .enumerate()
        .map(|(i, (&t, &at))| (t, i as i64, at, at + 5))
        .collect();
    (Kernels::from_rows_with_launch_keys(&rows, &keys), Launches::from_rows(&launches))
}

fn params(nesting: Nesting) -> AttributionParams {
    AttributionParams { devices: vec![0], nesting, ..AttributionParams::default() }
}

fn names_of(k: &Kernels, l: &Launches, r: &NvtxRanges, nesting: Nesting) -> Vec<String> {
    attribute_each(k, l, r, &params(nesting))
        .unwrap()
        .iter()
        .map(|o| match o.outcome {
            Outcome::Range(i) => r.name_of(i).to_string(),
            Outcome::Unattributed(reason) => format!("{reason:?}"),
        })
        .collect()
}

#[test]
fn nesting_picks_innermost_or_outermost_and_a_range_end_encloses_nothing() {
    let ranges = NvtxRanges::from_rows(&[
        (T1, 0, Some(100), "outer", 0),
        (T1, 10, Some(50), "mid", 0),
        (T1, 20, Some(30), "inner", 0),
    ]);
    // Launches at 25, 40, 60, 100 (the outer range's end), 0 (its start).
    let (k, l) = setup(&[T1; 5], &[25, 40, 60, 100, 0]);
    assert_eq!(
        names_of(&k, &l, &ranges, Nesting::Innermost),
        ["inner", "mid", "outer", "NoEnclosingRange", "outer"]
    );
    assert_eq!(
        names_of(&k, &l, &ranges, Nesting::Outermost),
        ["outer", "outer", "outer", "NoEnclosingRange", "outer"]
    );
}

#[test]
fn ties_go_to_the_shorter_inside_and_the_longer_outside() {
    let ranges = NvtxRanges::from_rows(&[
        (T1, 10, Some(50), "long", 0),
        (T1, 10, Some(30), "short", 0),
        (T1, 60, Some(70), "first", 0),
        (T1, 60, Some(70), "second", 0),
    ]);
    let (k, l) = setup(&[T1; 2], &[20, 65]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["short", "second"]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Outermost), ["long", "first"]);
}

#[test]
fn crossing_start_end_ranges_and_other_threads() {
    let ranges = NvtxRanges::from_rows(&[
        (T1, 0, Some(50), "a", 0),
        (T1, 10, Some(100), "b", 0),
        (T2, 0, Some(1000), "other thread", 0),
    ]);
    let (k, l) = setup(&[T1, T1, U1], &[20, 60, 20]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["b", "b", "NoEnclosingRange"]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Outermost), ["a", "b", "NoEnclosingRange"]);
}

#[test]
fn unterminated_ranges_close_at_the_last_timestamp() {
    let ranges =
        NvtxRanges::from_rows(&[(T1, 5, None, "open", 0), (T1, 10, Some(200), "closed", 0)]);
    assert_eq!(ranges.closed_at_ns, Some(200));
    let (k, l) = setup(&[T1; 3], &[7, 150, 200]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Outermost), ["open", "open", "NoEnclosingRange"]);
    let a = attribute(&k, &l, &ranges, &params(Nesting::Outermost)).unwrap();
    assert_eq!((a.unterminated_ranges, a.closed_at_ns), (1, Some(200)));
    let s = range_stats(&ranges, &StatsParams::default()).unwrap();
    assert_eq!((s.unterminated, s.closed_at_ns), (1, Some(200)));
    assert_eq!(s.rows.iter().find(|r| r.name == "open").unwrap().total_ns, 195);
}

#[test]
fn every_kernel_is_accounted_for_by_reason() {
    let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(100), "r, op_id = 1", 0)]);
    let rows = [
        (0, 7, 1000, 1010, "a"),
        (0, 7, 1100, 1130, "b"),
        (0, 7, 1200, 1300, "c"),
        (0, 7, 1400, 1401, "d"),
        (1, 7, 0, 5, "e"),
    ];
    // a: attributed; b: NULL correlation; c: no launch; d: a launch outside every range;
    // e: on another device (not selected).
    let keys = [
        (Some(7), Some(1)),
        (Some(7), None),
        (Some(7), Some(99)),
        (Some(7), Some(2)),
        (Some(7), Some(1)),
    ];
    let k = Kernels::from_rows_with_launch_keys(&rows, &keys);
    let l = Launches::from_rows(&[(T1, 1, 50, 55), (T1, 2, 500, 505), (U1, 99, 10, 20)]);
    let a = attribute(&k, &l, &ranges, &params(Nesting::Innermost)).unwrap();
    assert_eq!(a.selected, Tally { kernels: 4, kernel_ns: 141 });
    assert_eq!(a.attributed, Tally { kernels: 1, kernel_ns: 10 });
    assert_eq!(a.attributed_share, Share { num: 10, den: 141 });
    assert_eq!(a.unattributed.no_correlation_value, Tally { kernels: 1, kernel_ns: 30 });
    assert_eq!(a.unattributed.no_launch_record, Tally { kernels: 1, kernel_ns: 100 });
    assert_eq!(a.unattributed.no_enclosing_range, Tally { kernels: 1, kernel_ns: 1 });
    assert_eq!(a.unattributed.total().kernels + a.attributed.kernels, a.selected.kernels);
    assert_eq!(a.rows.len(), 1);
    let row = &a.rows[0];
    assert_eq!((row.name.as_str(), row.kernels, row.kernel_ns, row.span_ns), ("r", 1, 10, 10));
    assert_eq!(row.share.rational(), Rational::new(10, 141));
    assert_eq!(needed_launches(&k, &params(Nesting::Innermost)).len(), 3);

    let mut absent = k.clone();
    absent.launch_keys = LaunchKeys::Absent { missing: vec!["correlationId".into()] };
    let a = attribute(&absent, &l, &ranges, &params(Nesting::Innermost)).unwrap();
    assert_eq!(a.unattributed.no_correlation_columns.kernels, 4);
    assert_eq!(a.missing_columns, ["correlationId"]);
    let unread = Kernels::from_rows(&rows);
    assert_eq!(
        attribute(&unread, &l, &ranges, &params(Nesting::Innermost)),
        Err(NvtxError::LaunchKeysNotRead)
    );
}

#[test]
fn correlation_ids_are_matched_within_their_process() {
    let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(100), "p7", 0), (U1, 0, Some(100), "p8", 0)]);
    let rows = [(0, 7, 1000, 1010, "k"), (0, 7, 1100, 1110, "k")];
    let k = Kernels::from_rows_with_launch_keys(&rows, &[(Some(7), Some(1)), (Some(8), Some(1))]);
    let l = Launches::from_rows(&[(T1, 1, 10, 20), (U1, 1, 30, 40)]);
    assert_eq!(names_of(&k, &l, &ranges, Nesting::Innermost), ["p7", "p8"]);
}

#[test]
fn window_clips_kernel_time_and_span() {
    // The range runs into the window, so the window keeps it (clip) and it can receive
    // the kernels launched inside it.
    let ranges = NvtxRanges::from_rows(&[(T1, 0, Some(2000), "r", 0)]);
    let (k, l) = setup(&[T1; 3], &[10, 20, 30]);
    // Kernels at [1000,1010) [1100,1110) [1200,1210); window [1005, 1205).
    let w = Some(Window { start_ns: 1005, end_ns: 1205 });
    let clip = AttributionParams { window: w, ..params(Nesting::Innermost) };
    let a = attribute(&k, &l, &ranges, &clip).unwrap();
    assert_eq!(a.selected, Tally { kernels: 3, kernel_ns: 20 });
    assert_eq!((a.rows[0].first_start_ns, a.rows[0].last_end_ns), (1005, 1205));
    let contain = AttributionParams { semantics: Semantics::Contain, ..clip };
    let a = attribute(&k, &l, &ranges, &contain).unwrap();
    assert_eq!(a.selected, Tally { kernels: 1, kernel_ns: 10 });
    // Under contain the range is not inside the window: not kept, it receives nothing.
    assert_eq!(a.attributed, Tally::default());
}

#[test]
fn project_is_on_under_a_name_yaml_1_1_keeps_a_string() {
    let keys = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    };
    let w = NvtxWindow::from_keys(&keys(&[("nvtx", "step 4"), ("project", "gpu")])).unwrap();
    assert_eq!(w.on, Timeline::Gpu);
    let w = NvtxWindow::from_keys(&keys(&[("nvtx", "step 4"), ("on", "gpu")])).unwrap();
    assert_eq!(w.on, Timeline::Gpu);
    let both = keys(&[("nvtx", "s"), ("on", "gpu"), ("project", "gpu")]);
    assert!(NvtxWindow::from_keys(&both).unwrap_err().0.contains("one key"));
    let bad = keys(&[("nvtx", "s"), ("project", "gpus")]);
    assert_eq!(NvtxWindow::from_keys(&bad).unwrap_err().0, "`project: gpus` is not cpu or gpu");
}

#[test]
fn a_range_the_window_does_not_keep_receives_no_kernel() {
    // `outer` covers the window; `op` ended before it, on the CPU, but launched the kernel
    // that runs in it: under clip the kernel goes to `outer`, the kept range around `op`.
    let ranges =
        NvtxRanges::from_rows(&[(T1, 0, Some(2000), "outer", 0), (T1, 5, Some(15), "op", 0)]);
    let (k, l) = setup(&[T1; 3], &[10, 20, 30]);
    let w = Some(Window { start_ns: 1005, end_ns: 1205 });
    let clip = AttributionParams { window: w, ..params(Nesting::Innermost) };
    let a = attribute(&k, &l, &ranges, &clip).unwrap();
    assert_eq!(
        a.rows.iter().map(|r| (r.name.as_str(), r.kernels)).collect::<Vec<_>>(),
        [("outer", 3)]
    );
    // Without a window `op` is kept and receives the kernel it launched.
    let a = attribute(&k, &l, &ranges, &params(Nesting::Innermost)).unwrap();
    assert_eq!(a.rows.iter().find(|r| r.name == "op").map(|r| r.kernels), Some(1));
}

/// The definition, applied literally: every range of the thread, every kernel.
fn naive(
    ranges: &[(i64, i64, Option<i64>, &str, i64)],
    closed_at: i64,
    launches: &[(i64, i64)],
    nesting: Nesting,
) -> Vec<Option<usize>> {
    launches
        .iter()
        .map(|&(tid, t)| {
            let enclosing = ranges
                .iter()
                .enumerate()
                .filter(|(_, r)| r.0 == tid && r.1 <= t && t < r.2.unwrap_or(closed_at));
            // Order: start ascending, end descending, table order.
            let key = |(i, r): &(usize, &(i64, i64, Option<i64>, &str, i64))| {
                (r.1, std::cmp::Reverse(r.2.unwrap_or(closed_at)), *i)
            };
            match nesting {
                Nesting::Innermost => enclosing.max_by_key(key),
                Nesting::Outermost => enclosing.min_by_key(key),
            }
            .map(|(i, _)| i)
        })
        .collect()
}

proptest! {
    #[test]
    fn the_sweep_agrees_with_the_definition(
        raw in prop::collection::vec((0usize..2, 0i64..40, 0i64..25, prop::bool::weighted(0.1)), 0..25),
        at in prop::collection::vec((0usize..2, 0i64..70), 1..20),
    ) {
        let threads = [T1, T2];
        let names: Vec<String> = (0..raw.len()).map(|i| format!("r{i}")).collect();
        let rows: Vec<(i64, i64, Option<i64>, &str, i64)> = raw
            .iter()
            .zip(&names)
            .map(|(&(t, s, d, open), n)| (threads[t], s, (!open).then_some(s + d), n.as_str(), 0))
            .collect();
        let closed_at = rows.iter().map(|r| r.1.max(r.2.unwrap_or(i64::MIN))).max().unwrap_or(0);
        let ranges = NvtxRanges::from_rows(&rows);
        let thread_of: Vec<i64> = at.iter().map(|&(t, _)| threads[t]).collect();
        let times: Vec<i64> = at.iter().map(|&(_, x)| x).collect();
        let (k, l) = setup(&thread_of, &times);
        let launches: Vec<(i64, i64)> = thread_of.iter().copied().zip(times.iter().copied()).collect();
        for nesting in [Nesting::Innermost, Nesting::Outermost] {
            let got: Vec<Option<String>> = attribute_each(&k, &l, &ranges, &params(nesting))
                .unwrap()
                .iter()
                .map(|o| match o.outcome {
                    Outcome::Range(i) => Some(ranges.name_of(i).to_string()),
                    _ => None,
                })
                .collect();
            let want: Vec<Option<String>> = naive(&rows, closed_at, &launches, nesting)
                .into_iter()
                .map(|i| i.map(|i| names[i].clone()))
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
