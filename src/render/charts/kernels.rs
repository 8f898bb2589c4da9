//! Top kernels by total kernel time: one bar per name, read from the rows of kernels evidence.
//! The totals are sums of kernel durations over the scope's devices, and the caption says so.

use super::names::shorten;
use super::svg::{
    Axis, HALO, OUTLINE, close_svg, esc, f2, grid, hatch, legend, no_data, open_svg, text, w,
    x_axis,
};
use super::{Labels, Scope, fill, subst};
use crate::analysis::Evidence;
use crate::analysis::values::{Rows, Values};
use crate::i18n::Strings;
use crate::render::RenderError;
use crate::scope::format_device_list;
use crate::units;

/// One kernel name's total time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelBar {
    /// Kernel name; shortened on the chart, kept whole in the tooltip.
    pub name: String,
    /// Sum of the kernel's durations over the scope's devices.
    pub total_ns: i64,
    /// Number of launches.
    pub count: i64,
    /// Whether this is an NCCL kernel.
    pub nccl: bool,
}

/// The bars of kernels evidence with the number of distinct names in the scope, or `None` when
/// it is not kernels evidence.
pub(super) fn bars(ev: &Evidence) -> Option<(Vec<KernelBar>, i64)> {
    let (Some(Values::Kernels(v)), Some(Rows::Kernels(rows))) = (&ev.values, &ev.rows) else {
        return None;
    };
    let bars = rows
        .iter()
        .map(|r| KernelBar {
            // As the analyses classify kernels: NCCL when the name contains `nccl`.
            nccl: crate::trace::is_nccl_name(&r.name),
            name: r.name.clone(),
            total_ns: r.stats.total_ns,
            count: r.stats.count,
        })
        .collect();
    Some((bars, v.names))
}

/// The caption: how many names of how many, the scope, and that the totals are summed.
pub(super) fn caption(
    scope: &Scope,
    ev: &Evidence,
    shown: usize,
    names: i64,
    t: &Strings,
) -> Result<String, RenderError> {
    let top = fill(
        t,
        "ui.chart_top",
        &[("shown", &units::thousands(shown as i128)), ("names", &units::thousands(names.into()))],
    )?;
    let devices = format_device_list(&ev.scope.devices);
    let n = ev.scope.devices.len().to_string();
    let sum = if ev.scope.devices.len() == 1 {
        fill(t, "ui.chart_sum_one", &[("devices", &devices)])?
    } else {
        fill(t, "ui.chart_sum", &[("n", &n), ("devices", &devices)])?
    };
    let mut args = scope.args();
    args.push(("top", &top));
    args.push(("sum", &sum));
    fill(t, "ui.chart_kernels", &args)
}

/// Left edge of the bars; names sit above their bar at the same x.
const PLOT_X: f64 = 10.0;
/// Width of the plot area, leaving room right of it for the value labels.
pub(super) const PLOT_W: f64 = 440.0;
const TOP: f64 = 34.0;
const BAR_H: f64 = 12.0;
const ROW_H: f64 = 34.0;
/// Longest label drawn for a kernel name, in characters.
const NAME_MAX: usize = 48;

/// Top kernels by total time.
///
/// One bar per name on a linear ms axis, the name above it (shortened so that distinct names
/// keep distinct labels, whole in the `<title>`); NCCL kernels are hatched, the others plain.
pub fn kernels_chart(bars: &[KernelBar], l: &Labels) -> String {
    let Some(max_ns) = bars.iter().map(|b| b.total_ns).max() else {
        return no_data(&l.no_data);
    };
    let axis = Axis::nice(max_ns, 1_000_000);
    let plot_bottom = TOP + ROW_H * bars.len() as f64 - (ROW_H - 15.0 - BAR_H);
    let mut out = String::new();
    open_svg(&mut out, plot_bottom + 44.0);
    out.push_str("<defs>");
    hatch(&mut out, "kn-nccl", "#fdd0a2", "#7f2704");
    out.push_str("</defs>\n");
    legend(
        &mut out,
        PLOT_X,
        8.0,
        &[("#c6dbef", &l.compute_kernel), ("url(#kn-nccl)", &l.nccl_kernel)],
    );

    let ticks = axis.ticks();
    grid(&mut out, PLOT_X, PLOT_W, TOP - 2.0, plot_bottom + 4.0, &ticks);
    x_axis(&mut out, PLOT_X, PLOT_W, plot_bottom + 4.0, &ticks, &l.kernel_axis);

    // Shortened as shown, escapes included, so that a label fits its room.
    let shown: Vec<_> = bars.iter().map(|b| crate::visible::visible(&b.name, &[])).collect();
    let names: Vec<&str> = shown.iter().map(|n| n.as_ref()).collect();
    let labels = shorten(&names, NAME_MAX);
    for (i, (bar, label)) in bars.iter().zip(&labels).enumerate() {
        let y = TOP + ROW_H * i as f64;
        let by = y + 15.0;
        w!(out, "<g><title>{}</title>\n", esc(&bar.name));
        text(&mut out, PLOT_X, y + 11.0, "start", 11.0, HALO, label);
        let wdt = axis.scale(bar.total_ns, PLOT_W);
        let (class, fill) =
            if bar.nccl { ("nccl", "url(#kn-nccl)") } else { ("compute", "#c6dbef") };
        w!(
            out,
            "<rect class=\"{class}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{fill}\" stroke=\"{OUTLINE}\" stroke-width=\"0.6\"/>\n",
            f2(PLOT_X),
            f2(by),
            f2(wdt),
            f2(BAR_H),
        );
        let calls = if bar.count == 1 { &l.calls_one } else { &l.calls };
        let value = subst(
            calls,
            &[("ms", &units::ms(bar.total_ns)), ("n", &units::thousands(bar.count.into()))],
        );
        let mid = by + BAR_H / 2.0;
        text(
            &mut out,
            PLOT_X + wdt + 6.0,
            super::svg::baseline(mid, 11.0),
            "start",
            11.0,
            HALO,
            &value,
        );
        out.push_str("</g>\n");
    }
    close_svg(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::super::tests::{attr_of, en, evidence, ms, zh};
    use super::*;
    use serde_json::json;

    const MS: i64 = 1_000_000;

    pub(crate) fn article() -> Vec<KernelBar> {
        let rows = [
            ("ncclDevKernel_AllGather_RING_LL", 24000.0, 5_614, true),
            (
                "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
                9_812.37,
                41_160,
                false,
            ),
            ("nvjet_tst_256x128_64x4_1x2_h_bz_coopA_TNT", 7_431.90, 27_440, false),
            ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 5_204.66, 980, false),
            ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", 4_118.25, 2_807, true),
            ("flash_fwd_kernel", 2_297.04, 980, false),
            (
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>",
                1_503.12,
                88_200,
                false,
            ),
            ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 902.48, 140, true),
            ("layer_norm_fwd_kernel", 611.80, 1_960, false),
            ("multi_tensor_apply_kernel", 300.07, 1, false),
        ];
        rows.iter()
            .map(|&(name, t, count, nccl)| KernelBar {
                name: name.to_string(),
                total_ns: ms(t),
                count,
                nccl,
            })
            .collect()
    }

    #[test]
    fn bars_scale_to_the_axis_and_names_are_shortened() {
        let svg = kernels_chart(&article(), &en());
        // 24,000 ms on a 0..25,000 ms axis: 24/25 * 440 = 422.4.
        assert_eq!(attr_of(&svg, "class=\"nccl\"", "width"), 422.4);
        // 9,812.37 / 25,000 * 440 = 172.697...
        assert_eq!(attr_of(&svg, "class=\"compute\"", "width"), 172.7);
        assert!(svg.contains(">sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn…5x_cublas</text>"));
        assert!(svg.contains("<title>sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64"));
        assert!(svg.contains(">flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel</text>"));
        assert!(svg.contains(">24,000.00 ms (5,614 calls)</text>"));
        assert!(svg.contains(">300.07 ms (1 call)</text>"));
        assert!(svg.contains(">25,000</text>"));
    }

    #[test]
    fn milliseconds_round_half_away_from_zero() {
        let bar = KernelBar { name: "k".into(), total_ns: 1_094_745_000, count: 2, nccl: false };
        let svg = kernels_chart(&[bar], &en());
        // The float path printed 1,094.74.
        assert!(svg.contains(">1,094.75 ms (2 calls)</text>"), "{svg}");
    }

    #[test]
    fn cutlass_names_sharing_a_prefix_get_distinct_labels() {
        let name = |tile: &str| {
            format!(
                "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_{tile}_0_tnn_align8_warpspecialized_cooperative_epi_tma"
            )
        };
        let bars: Vec<KernelBar> = ["128x256x64_1x2x1", "256x128x64_2x1x1", "128x128x64_1x1x1"]
            .iter()
            .map(|t| KernelBar { name: name(t), total_ns: 5 * MS, count: 3, nccl: false })
            .collect();
        let svg = kernels_chart(&bars, &en());
        for tile in ["128x256x64_1x2x1", "256x128x64_2x1x1", "128x128x64_1x1x1"] {
            assert!(
                svg.contains(&format!(">cutlass3x_sm90…{tile}_0_tnn…epi_tma</text>")),
                "{tile}"
            );
            assert!(svg.contains(&format!("<title>{}</title>", name(tile))));
        }
    }

    #[test]
    fn text_is_escaped() {
        let name = "k<int>&\"x\"'y'".to_string();
        let svg = kernels_chart(&[KernelBar { name, total_ns: MS, count: 1, nccl: false }], &en());
        let escaped = "k&lt;int&gt;&amp;&quot;x&quot;&apos;y&apos;";
        assert!(svg.contains(&format!("<title>{escaped}</title>")));
        assert!(svg.contains(&format!(">{escaped}</text>")));
        assert!(!svg.contains("<int>"));
    }

    #[test]
    fn bars_come_from_kernels_evidence_only() {
        use crate::analysis::kernels::{Row, Stats, Values as KernelValues};
        let stats = Stats {
            count: 3,
            total_ns: 7,
            mean_ns: Some(2),
            min_ns: Some(1),
            median_ns: Some(2),
            max_ns: Some(4),
            per_device: [(1, 3)].into(),
        };
        let mut ev = evidence("kernels", json!({}));
        ev.values = Some(Values::Kernels(KernelValues {
            stats: stats.clone(),
            names: 1,
            devices_with_match: 1,
        }));
        ev.rows = Some(Rows::Kernels(vec![Row { name: "ncclDevKernel_x".into(), stats }]));
        let (bars, names) = bars(&ev).expect("bars");
        assert_eq!((bars[0].total_ns, bars[0].count, bars[0].nccl, names), (7, 3, true, 1));
        // Evidence of another analysis, or kernels evidence without its rows: no bars.
        assert!(super::bars(&evidence("kernels", json!({"names": 1}))).is_none());
        ev.rows = None;
        assert!(super::bars(&ev).is_none());
    }

    #[test]
    fn zh_tw_labels() {
        let svg = kernels_chart(&article(), &zh());
        for label in [
            "運算 kernel",
            "NCCL kernel",
            "kernel time 合計（ms）",
            "24,000.00 ms（5,614 次）",
            "300.07 ms（1 次）",
        ] {
            assert!(svg.contains(&format!(">{label}</text>")), "{label}");
        }
    }
}
