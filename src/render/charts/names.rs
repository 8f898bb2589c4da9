//! Short labels for long kernel names that stay distinct within one chart.
//!
//! Kernel names of one family share long prefixes and suffixes (CUTLASS tile shapes sit in the
//! middle of 120-character names), so cutting every name at the same length can give two bars
//! the same label. Here the part that tells a name from its neighbours is kept, and what it
//! shares with them is elided with `…`. The full name is the chart's business (`<title>`).

/// The elision mark.
const ELLIPSIS: char = '…';
/// Characters a one-ellipsis label would rather keep at the end.
const TAIL: usize = 14;
/// Shortest label with room for a head, a window and a tail.
const MIN_WINDOWED: usize = 12;

/// Labels of at most `max` characters for `names`, one per name, in order.
///
/// A name that fits is kept whole. A longer one keeps its start and (often) its end around one
/// `…`, split at token boundaries where possible and always so that the label shows a character
/// where the name differs from every other; when the difference lies deep in the middle, it
/// keeps a short start, a window at the first difference and a short end, around two `…`.
/// Distinct names always get distinct labels: a shortened label that still collides with
/// another one falls back to the full name.
pub fn shorten(names: &[&str], max: usize) -> Vec<String> {
    let max = max.max(3);
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    let mut labels: Vec<String> = (0..chars.len()).map(|i| shorten_one(&chars, i, max)).collect();
    let clashes: Vec<usize> = (0..labels.len())
        .filter(|&i| {
            labels[i] != names[i]
                && (0..labels.len())
                    .any(|j| j != i && labels[j] == labels[i] && names[j] != names[i])
        })
        .collect();
    // A full name cannot clash: shortened labels are shorter than it, full ones are other names.
    for i in clashes {
        labels[i] = names[i].to_string();
    }
    labels
}

/// The label of `all[i]` among `all`.
fn shorten_one(all: &[Vec<char>], i: usize, max: usize) -> String {
    let name = &all[i];
    let len = name.len();
    if len <= max {
        return name.iter().collect();
    }
    // Per other name: the shared prefix and suffix lengths. A label tells the two apart when
    // its head reaches past the shared prefix or its tail past the shared suffix.
    let shared: Vec<(usize, usize)> = all
        .iter()
        .enumerate()
        .filter(|&(j, o)| j != i && o != name)
        .map(|(_, o)| {
            let p = name.iter().zip(o).take_while(|(a, b)| a == b).count();
            let room = len.min(o.len()) - p;
            let s = name.iter().rev().zip(o.iter().rev()).take_while(|(a, b)| a == b).count();
            (p, s.min(room))
        })
        .collect();
    let told = |head: usize, tail: usize| shared.iter().all(|&(p, s)| head > p || tail > s);

    // One ellipsis: head + … + tail (the tail possibly empty), the cheapest split that tells
    // every name apart.
    let budget = max - 1;
    let cost = |h: usize, t: usize| {
        2 * (budget - h - t)
            + t.abs_diff(TAIL)
            + 20 * (!head_ends(name, h) as usize)
            + 20 * (!tail_starts(name, t) as usize)
    };
    let best = (1..budget)
        .flat_map(|h| (0..=budget - h).map(move |t| (h, t)))
        .filter(|&(h, t)| told(h, t))
        .min_by_key(|&(h, t)| (cost(h, t), std::cmp::Reverse(h)));
    if let Some((h, t)) = best {
        return render(name, &[(0, h), (len - t, len)]);
    }

    // Two ellipses: a short head and tail for context, and a window at the first difference
    // that neither of them shows. Too little room for three pieces: a plain cut, which the
    // clash check in `shorten` corrects if need be.
    if max < MIN_WINDOWED {
        return render(name, &[(0, budget)]);
    }
    let head = (max / 5..=max * 3 / 10).rev().find(|&h| head_ends(name, h)).unwrap_or(max * 3 / 10);
    // The tail that leaves the fewest names for the window to tell apart, at a token start.
    let tail = (max / 8..=max / 4)
        .min_by_key(|&t| {
            let open = shared.iter().filter(|&&(p, s)| !(head > p || t > s)).count();
            (open, !tail_starts(name, t), t.abs_diff(max / 5))
        })
        .unwrap_or(max / 5);
    let window = max - 2 - head - tail;
    let first = shared
        .iter()
        .filter(|&&(p, s)| !(head > p || tail > s))
        .map(|&(p, _)| p)
        .min()
        .unwrap_or(head);
    // Start the window at the token the difference is in, when that is near.
    let token = (first.saturating_sub(window / 2)..=first)
        .rev()
        .find(|&a| a == 0 || is_separator(name[a - 1]))
        .unwrap_or(first.saturating_sub(2));
    let start = token.max(head).min(len - tail - window);
    // End it at a token boundary too, when that costs little.
    let end = (start + window * 2 / 3..=start + window)
        .rev()
        .find(|&b| head_ends(name, b))
        .unwrap_or(start + window);
    render(name, &[(0, head), (start, end), (len - tail, len)])
}

/// Whether a character separates tokens of a kernel name (`_`, `:`, `<`, `(`, ` `, …).
fn is_separator(c: char) -> bool {
    !c.is_alphanumeric()
}

/// Whether the first `h` characters end where a token ends (the next one is a separator).
fn head_ends(name: &[char], h: usize) -> bool {
    h >= name.len() || (!is_separator(name[h - 1]) && is_separator(name[h]))
}

/// Whether the last `t` characters start where a token starts (an empty tail does).
fn tail_starts(name: &[char], t: usize) -> bool {
    let at = name.len() - t;
    t == 0 || at == 0 || (is_separator(name[at - 1]) && !is_separator(name[at]))
}

/// The characters of `name` in the given ranges (ordered, possibly touching), with `…` for
/// each gap between them.
fn render(name: &[char], ranges: &[(usize, usize)]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for &(a, b) in ranges {
        let a = a.max(at);
        if a > at {
            out.push(ELLIPSIS);
        }
        out.extend(&name[a..b.max(a)]);
        at = b.max(a);
    }
    if at < name.len() {
        out.push(ELLIPSIS);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CUTLASS_128: &str = "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_cooperative_epi_tma";
    const CUTLASS_256: &str = "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_256x128x64_2x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma";
    const CUTLASS_PINGPONG: &str = "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_warpspecialized_pingpong_epi_tma";
    const NCCL_AR_BF16: &str =
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    const NCCL_AR_F32: &str =
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
    const NCCL_RS: &str =
        "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

    fn distinct(labels: &[String]) -> bool {
        let mut v = labels.to_vec();
        v.sort();
        v.dedup();
        v.len() == labels.len()
    }

    #[test]
    fn short_names_are_kept_whole() {
        assert_eq!(shorten(&["flash_fwd_kernel", "abcd"], 16), ["flash_fwd_kernel", "abcd"]);
        assert_eq!(
            shorten(&["ncclDevKernel_AllGather_RING_LL"], 48),
            ["ncclDevKernel_AllGather_RING_LL"]
        );
    }

    #[test]
    fn a_lone_long_name_keeps_its_start_and_end() {
        let name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas";
        let l = shorten(&[name], 48);
        // Whole tokens: 38 characters of head, the ellipsis, 9 of tail.
        assert_eq!(l, ["sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn…5x_cublas"]);
        assert_eq!(l[0].chars().count(), 48);
    }

    #[test]
    fn cutlass_tile_shapes_in_the_middle_stay_visible() {
        let names = [CUTLASS_128, CUTLASS_256, CUTLASS_PINGPONG];
        let l = shorten(&names, 48);
        // The first 47 characters are the same for all three: a plain cut gives one label.
        assert!(names.iter().all(|n| n[..47] == CUTLASS_128[..47]));
        assert_eq!(
            l,
            [
                // The tile shapes differ at character 63, the shared suffix is 52 long: no
                // single cut shows them, so a window does; the tail keeps `cooperative` apart
                // from `pingpong`.
                "cutlass3x_sm90…128x256x64_1x2x1_0_tnn…e_epi_tma",
                "cutlass3x_sm90…256x128x64_2x1x1_0_tnn…e_epi_tma",
                "cutlass3x_sm90_tensorop…pingpong_epi_tma",
            ]
        );
        assert!(distinct(&l));
        assert!(l.iter().all(|s| s.chars().count() <= 48));
    }

    #[test]
    fn nccl_names_sharing_a_long_argument_suffix() {
        let names = [NCCL_AR_BF16, NCCL_AR_F32, NCCL_RS, "ncclDevKernel_AllGather_RING_LL"];
        let l = shorten(&names, 40);
        assert_eq!(
            l,
            [
                // bf16 and f32 part after the 28 shared characters; the argument suffix adds
                // nothing there, so that label spends its room on the head.
                "ncclDevKernel_AllReduce_Sum_bf16_RING…",
                "ncclDevKernel_AllReduce_Sum_f32…4096ul>)",
                "ncclDevKernel_ReduceScatter_Sum…4096ul>)",
                "ncclDevKernel_AllGather_RING_LL",
            ]
        );
        assert!(distinct(&l));
    }

    #[test]
    fn names_that_differ_only_at_the_end_keep_the_end() {
        let a = format!("{}_v1", "x".repeat(60));
        let b = format!("{}_v2", "x".repeat(60));
        let l = shorten(&[&a, &b], 20);
        assert!(distinct(&l));
        assert_eq!(l, [format!("{}…v1", "x".repeat(17)), format!("{}…v2", "x".repeat(17))]);
    }

    #[test]
    fn distinct_names_always_get_distinct_labels() {
        // Names that already contain the ellipsis could spell another label; the fallback to
        // the full name keeps them apart.
        let a = "abcdefghij…uvwxyz";
        let b = "abcdefghij_klmnop_qrst_uvwxyz";
        let l = shorten(&[a, b], 17);
        assert!(distinct(&l), "{l:?}");
        // Many near-identical names.
        let names: Vec<String> =
            (0..50).map(|i| format!("{}{i:02}{}", "p".repeat(40), "s".repeat(40))).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let l = shorten(&refs, 24);
        assert!(distinct(&l));
        assert!(l.iter().all(|s| s.chars().count() <= 24), "{l:?}");
        // A repeated name keeps one label.
        assert_eq!(shorten(&[CUTLASS_128, CUTLASS_128], 48)[0], shorten(&[CUTLASS_128], 48)[0]);
    }

    proptest::proptest! {
        #[test]
        fn labels_are_distinct_and_short_or_whole(
            names in proptest::collection::btree_set("[ab_x…]{0,40}", 1..12),
            max in 3usize..50,
        ) {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let labels = shorten(&names, max);
            proptest::prop_assert!(distinct(&labels), "{:?} -> {:?}", names, labels);
            for (n, l) in names.iter().zip(&labels) {
                proptest::prop_assert!(l.chars().count() <= max || l == n, "{} -> {}", n, l);
            }
        }
    }
}
