use crate::analysis::{self, Context, Evidence, Params, show};
use crate::scope::DeviceSel;
use crate::trace::Kernels;

/// Three ranks, two matched NCCL instances (the case of `nccl_skew`'s own unit test):
/// durations 900, 600, 300 and 500, 510, 400 ns.
fn skew() -> Evidence {
    let ctx = Context::from_kernels(Kernels::from_rows(&[
        (1, 56, 100, 1000, "ncclAG"),
        (2, 56, 400, 1000, "ncclAG"),
        (3, 56, 700, 1000, "ncclAG"),
        (1, 56, 2000, 2500, "ncclRS"),
        (2, 56, 2000, 2510, "ncclRS"),
        (3, 56, 2100, 2500, "ncclRS"),
    ]));
    let mut p = Params::new(DeviceSel::All);
    p.stream = Some(56);
    analysis::run("nccl-skew", &p, &ctx).unwrap()
}

fn line<'a>(text: &'a str, label: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(label)).unwrap_or_else(|| panic!("{label}:\n{text}"))
}

#[test]
fn nccl_skew_times_keep_their_unit() {
    let text = show::render(&skew(), 100);
    // nccl 900 + 600 + 300 + 500 + 510 + 400 = 3,210 ns; wait (600 + 300) + (100 + 110)
    // = 1,110 ns; 1,110 / 3,210 = 34.58%.
    assert_eq!(line(&text, "wait share"), "wait share   1.11 µs / 3.21 µs = 34.6%");
    // Start skews 600 and 100 ns, end skews 0 and 10 ns.
    assert!(line(&text, "start skew").starts_with("start skew   min 100 ns · median "));
    assert!(line(&text, "start skew").ends_with(" · max 600 ns"));
    assert!(line(&text, "end skew").starts_with("end skew     min 0 ns · median "));
    assert!(line(&text, "end skew").ends_with(" · max 10 ns"));
    // Rank 1 waits 600 + 100, rank 2 300 + 110, rank 3 never.
    assert_eq!(line(&text, "rank wait"), "rank wait    1:700 ns 2:410 ns 3:0 ns");
    assert_eq!(line(&text, "ranks"), "ranks        3 · matched instances 2");
}

#[test]
fn a_null_or_absent_nccl_skew_value_reads_n_a_not_zero() {
    let mut ev = skew();
    let Some(crate::analysis::values::Values::NcclSkew(v)) = ev.values.as_mut() else {
        panic!()
    };
    v.wait_ns = None;
    v.end_skew_ns = None;
    v.rank_wait_ns = None;
    let text = show::render(&ev, 100);
    assert_eq!(line(&text, "wait share"), "wait share   n/a / 3.21 µs = n/a");
    assert_eq!(
        line(&text, "end skew"),
        "end skew     min n/a · median n/a · p90 n/a · max n/a"
    );
    assert_eq!(line(&text, "rank wait"), "rank wait    n/a");
    assert!(!text.contains("0.00 ms"), "{text}");
    // The window spans 100-2,510 ns.
    assert!(text.contains("effective 0.0000001-0.00000251 s (2.41 µs)"), "{text}");
}
