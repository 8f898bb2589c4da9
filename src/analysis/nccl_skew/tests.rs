use super::*;
use crate::scope::{DeviceSel, Window};
use crate::trace::Kernels;

#[test]
fn two_instances_three_ranks_by_hand() {
    // Instance 0 ends together at 1000; starts 100, 400, 700 -> durations 900, 600, 300.
    // Instance 1: starts 2000, 2000, 2100, ends 2500, 2510, 2500 -> 500, 510, 400.
    // Device 3 has a third kernel at 3000, which the window 0-2.6 µs leaves out.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (2, 56, 400, 1000, "ncclAG"),
        (3, 56, 700, 1000, "ncclAG"),
        (1, 56, 2000, 2500, "ncclRS"),
        (2, 56, 2000, 2510, "ncclRS"),
        (3, 56, 2100, 2500, "ncclRS"),
        (3, 56, 3000, 3100, "ncclRS"),
        (1, 21, 0, 5000, "gemm"),
    ]));
    let mut p = Params::new(DeviceSel::All);
    p.stream = Some(56);
    p.window = Some(Window { start_ns: 0, end_ns: 2600 });
    let s = compute(&ctx, &[1, 2, 3], &p).unwrap();
    assert_eq!(s.matched, 2);
    assert_eq!(s.counts, vec![2, 2, 2]);
    assert_eq!(s.unmatched, vec![0, 0, 0]);
    assert_eq!(s.nccl, 900 + 600 + 300 + 500 + 510 + 400);
    assert_eq!(s.wait, (600 + 300) + (100 + 110));
    assert_eq!(s.start_skews, vec![600, 100]);
    assert_eq!(s.end_skews, vec![0, 10]);
    assert_eq!(s.rank_wait, vec![600 + 100, 300 + 110, 0]);
    assert_eq!(s.last_arrivals, vec![0, 0, 2]);
    // First: device 1 at 100; instance 1 ties devices 1 and 2 at 2000 (the lowest).
    assert_eq!(s.first_arrivals, vec![2, 0, 0]);
    assert_eq!(s.start_offsets, vec![vec![0, 0], vec![300, 0], vec![600, 100]]);
    assert_eq!(s.end_offsets, vec![vec![0, 0], vec![0, 10], vec![0, 0]]);
    let ev = run(&p, &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["wait_share"], json!(1110.0 / 3210.0));
    assert_eq!(v["most_often_last"], json!([3]));
    assert_eq!(v["straggler_last"], 2);
    assert_eq!(v["unmatched"], 0);
    // Rows per rank: device 3 arrived last twice of 2, waits nothing.
    let rows = ev.rows.as_ref().unwrap().to_maps();
    assert_eq!(rows[2]["device"], 3);
    assert_eq!(rows[2]["arrived_last"], 2);
    assert_eq!(rows[2]["straggler"], 1);
    assert_eq!(rows[0]["straggler"], 0);
    assert_eq!(rows[0]["wait_ns"], 700);
    assert_eq!(rows[1]["start_offset_max_ns"], 300);
    assert_eq!(rows[2]["start_offset_median_ns"], 100);
    assert_eq!(rows[1]["end_offset_max_ns"], 10);
    let view = Evidence {
        values: Some(crate::analysis::values::Values::Map(rows[0].clone())),
        rows: None,
        ..ev.clone()
    };
    // mean_wait_ns = 700 / 2, exactly.
    assert_eq!(view.field("mean_wait_ns").unwrap(), crate::formula::Rational::new(350, 1));

    // Over the whole trace the third kernel has no counterpart: nothing that compares
    // ranks is judged, and the note names the rank.
    p.window = None;
    let ev = run(&p, &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["unmatched"], 1);
    assert_eq!(v["matched"], 2);
    assert_eq!(v["start_skew_max_ns"], Value::Null);
    let n = note(&ev, "note.unmatched_kernels");
    assert_eq!(n.finding.args["per_rank"], "3:1");
    assert_eq!(ev.rows.as_ref().unwrap().to_maps()[2]["arrived_last"], Value::Null);
}

#[test]
fn collectives_are_matched_by_name_not_by_position_on_the_stream() {
    // Device 2 issues its ReduceScatter before its AllGather; both run together with
    // device 1's. By position, AllGather would pair with ReduceScatter.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 500, "ncclDevKernel_AllGather_RING_LL"),
        (1, 56, 600, 1000, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
        (2, 56, 120, 480, "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"),
        (2, 57, 130, 490, "ncclDevKernel_AllGather_RING_LL"),
    ]));
    // Both streams of device 2 (no stream chosen): AllGather 100-500 with 130-490,
    // ReduceScatter 600-1000 with 120-480, which never run at one moment.
    let s = compute(&ctx, &[1, 2], &Params::new(DeviceSel::All)).unwrap();
    assert_eq!(s.instances.len(), 1);
    assert_eq!(s.instances[0].collective, "AllGather");
    assert_eq!(s.start_skews, vec![30]);
    assert_eq!(s.overlap_failures.len(), 1);
    assert_eq!(s.overlap_failures[0].collective, "ReduceScatter");
    let ev = run(&Params::new(DeviceSel::All), &ctx).unwrap();
    assert_eq!(ev.values.as_ref().unwrap().to_map()["overlap_failures"], 1);
    assert_eq!(ev.values.as_ref().unwrap().to_map()["wait_share"], Value::Null);
    let n = note(&ev, "note.overlap_failures");
    assert!(n.finding.args["list"].starts_with("ReduceScatter #1 ("), "{n:?}");
}

#[test]
fn a_missing_kernel_on_one_rank_fails_the_overlap_test_not_the_numbers() {
    // Three AllReduces on device 1, the second lost on device 2: ordinal pairing would
    // match device 2's third with device 1's second.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 7, 0, 100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
        (1, 7, 1000, 1100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
        (1, 7, 2000, 2100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
        (2, 7, 10, 100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
        (2, 7, 2010, 2100, "ncclKernel_AllReduce_RING_LL_Sum_float"),
    ]));
    let s = compute(&ctx, &[1, 2], &Params::new(DeviceSel::All)).unwrap();
    assert_eq!(s.matched, 1);
    assert_eq!(s.overlap_failures.len(), 1);
    assert_eq!(s.overlap_failures[0].span, [1000, 2100]);
    assert_eq!(s.unmatched, vec![1, 0]);
    assert!(s.broken(Semantics::Clip));
}

#[test]
fn a_window_that_cuts_an_instance_is_broken_under_clip_and_left_out_under_contain() {
    // Instance 1 runs 100-1000 (device 1) and 500-1000 (device 2); instance 2 runs
    // 2000-2500 on both. The window 0.3-3 µs holds device 2's first kernel but not
    // device 1's.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 7, 100, 1000, "ncclAR"),
        (2, 7, 500, 1000, "ncclAR"),
        (1, 7, 2000, 2500, "ncclAR"),
        (2, 7, 2100, 2500, "ncclAR"),
    ]));
    let mut p = Params::new(DeviceSel::All);
    p.window = Some(Window { start_ns: 300, end_ns: 3000 });
    let ev = run(&p, &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["cut_instances"], 1);
    assert_eq!(v["start_skew_max_ns"], Value::Null);
    let n = note(&ev, "note.window_cuts");
    assert_eq!(n.finding.args["n"], "1");
    assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.whole_instances");
    // Contain keeps the whole second instance only, and says what it left out.
    p.semantics = Semantics::Contain;
    let ev = run(&p, &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!((v["matched"].clone(), v["start_skew_max_ns"].clone()), (json!(1), json!(100)));
    assert_eq!(note(&ev, "note.cut_left_out").finding.args["n"], "1");
    assert_eq!(ev.window.effective_ns, Some([2000, 2500]));
    // A window between the instances holds the second whole: the same numbers, no note.
    p.semantics = Semantics::Clip;
    p.window = Some(Window { start_ns: 1500, end_ns: 3000 });
    let ev = run(&p, &ctx).unwrap();
    assert_eq!(ev.values.as_ref().unwrap().to_map()["start_skew_max_ns"], 100);
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.window_cuts"));
}

/// Tensor-parallel pairs {1, 2} and {3, 4} and data-parallel pairs {1, 3} and {2, 4} on
/// four ranks, each issuing its TP AllReduce then its DP AllReduce on one stream, every
/// kernel launched inside an `ncclAllReduce` range whose payload names its communicator.
fn tp_dp(payloads: bool) -> Context {
    use crate::analysis::NvtxData;
    use crate::trace::nvtx::{Launches, NvtxRanges};
    use crate::trace::payload::{Decoded, NcclPayload, Payloads};
    let tid = |p: i64| (p << 24) | 7;
    let name = "ncclKernel_AllReduce_RING_LL_Sum_float";
    // (device, start, end, communicator)
    let calls: [(i64, i64, i64, u64); 8] = [
        (1, 100, 1000, 0xA),
        (2, 150, 1000, 0xA),
        (3, 5000, 6000, 0xB),
        (4, 5300, 6000, 0xB),
        (1, 6100, 7000, 0xD1),
        (3, 6200, 7000, 0xD1),
        (2, 6300, 7200, 0xD2),
        (4, 6400, 7200, 0xD2),
    ];
    let rows: Vec<(i64, i64, i64, i64, &str)> =
        calls.iter().map(|&(d, a, b, _)| (d, 7, a, b, name)).collect();
    let keys: Vec<(Option<i64>, Option<i64>)> =
        calls.iter().enumerate().map(|(j, &(d, ..))| (Some(d), Some(j as i64))).collect();
    let launches: Vec<(i64, i64, i64, i64)> = calls
        .iter()
        .enumerate()
        .map(|(j, &(d, a, ..))| (tid(d), j as i64, a - 50, a - 40))
        .collect();
    let ranges: Vec<(i64, i64, Option<i64>, &str, i64)> = calls
        .iter()
        .map(|&(d, a, ..)| (tid(d), a - 60, Some(a - 30), "ncclAllReduce", 1))
        .collect();
    let mut ranges = NvtxRanges::from_rows(&ranges);
    if payloads {
        ranges.payloads = Payloads::from_rows(
            calls
                .iter()
                .map(|&(d, a, _, c)| {
                    let v = NcclPayload { comm: Some(c), ..Default::default() };
                    (tid(d), a - 60, Some(a - 30), Decoded::Values(v))
                })
                .collect(),
        );
    }
    Context::from_kernels(Kernels::from_rows_with_launch_keys(&rows, &keys))
        .with_nvtx(NvtxData { ranges, launches: Launches::from_rows(&launches) })
}

#[test]
fn communicators_pair_what_ordinals_would_pair_across_groups() {
    // By ordinal the first AllReduce of every rank is one instance: 100-1000 on the TP
    // pair {1, 2} and 5000-6000 on {3, 4}, which never run at one moment.
    let s = compute(&tp_dp(false), &[1, 2, 3, 4], &Params::new(DeviceSel::All)).unwrap();
    assert_eq!(s.rule, MatchRule::CollectiveOrdinal);
    assert_eq!((s.matched, s.overlap_failures.len()), (1, 1));
    assert!(s.payload_unusable.is_empty());
    // By communicator: four instances of two ranks each, skews 50, 300, 100, 100.
    let s = compute(&tp_dp(true), &[1, 2, 3, 4], &Params::new(DeviceSel::All)).unwrap();
    assert_eq!(s.rule, MatchRule::CommunicatorOrdinal);
    assert_eq!((s.matched, s.overlap_failures.len(), s.unmatched.clone()), (4, 0, vec![0; 4]));
    assert_eq!(s.start_skews, vec![50, 300, 100, 100]);
    let members: Vec<Vec<usize>> = s.instances.iter().map(|x| x.members.clone()).collect();
    assert_eq!(members, vec![vec![0, 1], vec![2, 3], vec![0, 2], vec![1, 3]]);
    assert_eq!(s.rank_matched, vec![2; 4]);
    // Waits (duration - the instance's shortest): device 1 900 - 850 (TP) + 900 - 800
    // (DP); device 2 0 + 900 - 800; device 3 1000 - 700 + 0; device 4 never.
    assert_eq!(s.rank_wait, vec![150, 100, 300, 0]);
    // Arrived last: rank 2 (TP), 4 (TP), 3 (DP), 4 (DP).
    assert_eq!(s.last_arrivals, vec![0, 1, 1, 2]);
    let ids: Vec<u64> = s.communicators.iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![0xA, 0xB, 0xD1, 0xD2]);
    let ev = run(&Params::new(DeviceSel::All), &tp_dp(true)).unwrap();
    assert_eq!(ev.parameters["match_rule"], COMM_RULE);
    assert_eq!(ev.values.as_ref().unwrap().to_map()["start_skew_max_ns"], 300);
    assert_eq!(ev.rows.as_ref().unwrap().to_maps()[3]["matched"], 2);
    note(&ev, "note.match_communicators");
}

#[test]
fn the_collective_of_a_kernel_name() {
    assert_eq!(collective("ncclKernel_AllReduce_RING_LL_Sum_float"), "AllReduce");
    assert_eq!(collective("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "AllReduce");
    assert_eq!(collective("ncclDevKernel_SendRecv"), "SendRecv");
    assert_eq!(collective("ncclDevKernel_SendRecv(ncclDevKernelArgs)"), "SendRecv");
    assert_eq!(collective("ncclAG"), "ncclAG");
    assert_eq!(collective("ncclKernel_"), "ncclKernel_");
}

/// The note of a key, which must be present once.
fn note<'a>(ev: &'a Evidence, key: &str) -> &'a crate::analysis::Note {
    let found: Vec<_> = ev.notes.iter().filter(|n| n.finding.key == key).collect();
    assert_eq!(found.len(), 1, "one `{key}` note in {:?}", ev.notes);
    found[0]
}

/// Every quantity that compares ranks is null, and the ones that exist are not.
fn assert_cross_rank_null(ev: &Evidence) {
    let v = ev.values.as_ref().unwrap().to_map();
    for f in CROSS_RANK {
        assert_eq!(v[*f], Value::Null, "`{f}` must be null, not a stand-in value");
    }
    for f in ["ranks", "matched", "instance_counts", "unmatched", "nccl_ns"] {
        assert!(!v[f].is_null(), "`{f}` exists and keeps its value");
    }
}

fn params(devices: &[i64]) -> Params {
    Params::new(DeviceSel::Set(devices.to_vec()))
}

#[test]
fn one_rank_has_no_skew_and_says_it_needs_two() {
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (1, 56, 2000, 2500, "ncclRS"),
        (2, 56, 300, 1000, "ncclAG"),
    ]));
    let ev = run(&params(&[1]), &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["ranks"], 1);
    assert_eq!(v["matched"], 2);
    assert_eq!(v["instance_counts"], json!({"1": 2}));
    // Device 1's NCCL kernel time: 900 + 500.
    assert_eq!(v["nccl_ns"], 1400);
    assert_cross_rank_null(&ev);
    let n = note(&ev, "note.one_rank");
    assert_eq!(n.finding.args["devices"], "1");
    assert!(n.text.contains("needs at least two ranks in one scope"), "{}", n.text);
    assert_eq!(n.null_fields.len(), CROSS_RANK.len());
    assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.two_ranks");
    assert_eq!(ev.null_reasons("wait_share")[0].finding.key, "note.one_rank");
    // Nothing is compared, so no caveat about the comparison.
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.transfer_estimate"));
}

#[test]
fn no_matched_instance_when_a_rank_has_no_nccl_kernel() {
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (1, 21, 0, 900, "gemm"),
        (2, 21, 0, 900, "gemm"),
    ]));
    let ev = run(&params(&[1, 2]), &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["ranks"], 2);
    assert_eq!(v["matched"], 0);
    assert_eq!(v["instance_counts"], json!({"1": 1, "2": 0}));
    assert_eq!(v["unmatched"], 1);
    assert_eq!(v["nccl_ns"], 0);
    assert_cross_rank_null(&ev);
    let n = note(&ev, "note.no_matched");
    assert_eq!(n.finding.args["empty"], "2");
    assert!(n.text.starts_with("no matched instances"), "{}", n.text);
    assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.matched");
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_nccl_in_trace"));
}

#[test]
fn a_trace_without_nccl_kernels_says_so() {
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (0, 7, 0, 900, "gemm"),
        (1, 15, 0, 800, "elementwise"),
    ]));
    let ev = run(&Params::new(DeviceSel::All), &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!((v["ranks"].clone(), v["matched"].clone()), (json!(2), json!(0)));
    assert_cross_rank_null(&ev);
    let n = note(&ev, "note.no_nccl_in_trace");
    assert!(n.text.starts_with("the trace has no NCCL kernels"), "{}", n.text);
    assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.nccl_trace");
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_matched"));

    // One device of it: both reasons, the trace's first.
    let ev = run(&params(&[0]), &ctx).unwrap();
    assert_cross_rank_null(&ev);
    let keys: Vec<&str> =
        ev.null_reasons("wait_ns").iter().map(|n| n.finding.key.as_str()).collect();
    assert_eq!(keys, ["note.no_nccl_in_trace", "note.one_rank"]);
}

#[test]
fn a_selection_without_nccl_kernels_is_not_a_trace_without_them() {
    // NCCL runs on stream 56 only; stream 7 selects none of it.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (2, 56, 400, 1000, "ncclAG"),
    ]));
    let mut p = params(&[1, 2]);
    p.stream = Some(7);
    let ev = run(&p, &ctx).unwrap();
    assert_cross_rank_null(&ev);
    let n = note(&ev, "note.no_nccl");
    assert_eq!(n.finding.args["devices"], "1-2");
    assert_eq!(n.needs.as_ref().unwrap().finding.key, "need.nccl_kernels");
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.no_nccl_in_trace"));
}

#[test]
fn a_tie_for_most_often_last_lists_every_tied_rank() {
    // Instance 0 starts at 100, 300, 500: device 3 is last. Instance 1 starts at 2000,
    // 2400, 2200: device 2 is last. Device 1 is never last.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (2, 56, 300, 1000, "ncclAG"),
        (3, 56, 500, 1000, "ncclAG"),
        (1, 56, 2000, 3000, "ncclAG"),
        (2, 56, 2400, 3000, "ncclAG"),
        (3, 56, 2200, 3000, "ncclAG"),
    ]));
    let ev = run(&params(&[1, 2, 3]), &ctx).unwrap();
    let v = ev.values.as_ref().unwrap().to_map();
    assert_eq!(v["last_arrivals"], json!({"1": 0, "2": 1, "3": 1}));
    assert_eq!(v["most_often_last"], json!([2, 3]));
    let n = note(&ev, "note.last_tie");
    assert_eq!(n.finding.args["devices"], "2, 3");
    assert_eq!(n.text, "a tie: devices 2, 3 each arrived last in 1 of 2 instances");
    assert!(n.null_fields.is_empty());

    // Without the second instance device 3 alone is last: a list of one, no tie.
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (2, 56, 300, 1000, "ncclAG"),
        (3, 56, 500, 1000, "ncclAG"),
    ]));
    let ev = run(&params(&[1, 2, 3]), &ctx).unwrap();
    assert_eq!(ev.values.as_ref().unwrap().to_map()["most_often_last"], json!([3]));
    assert!(ev.notes.iter().all(|n| n.finding.key != "note.last_tie"));
}
