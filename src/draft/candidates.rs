//! The measures a draft proposes: per analysis, the cue words that point to it and the field
//! for each kind of value a sentence states.

use super::Category;

/// The candidate analyses: cue words, then the field for each kind of value.
type Fields = &'static [(Category, &'static str, &'static str)];
pub(super) const ANALYSES: &[(&str, &[&str], Fields)] = &[
    (
        "nccl-skew",
        &["等待", "互等", "等彼此", "落後", "不同步", "最慢的", "straggler", "skew", "wait"],
        &[
            (Category::Share, "wait_share", "%"),
            (Category::Time, "start_skew_max_ns", "ms"),
            (Category::Count, "matched", "count"),
        ],
    ),
    (
        "copies",
        &[
            "memcpy", "memset", "copy", "copies", "拷貝", "複製", "搬移", "h2d", "d2h", "htod",
            "dtoh", "pcie",
        ],
        &[
            (Category::Share, "idle_copy_ns / idle_ns", "%"),
            (Category::Time, "memcpy_busy_ns", "ms"),
            (Category::Bandwidth, "bytes / memcpy_busy_ns", "GB/s"),
            (Category::Bytes, "bytes", "bytes"),
            (Category::Count, "copies", "count"),
        ],
    ),
    (
        "nvtx",
        &[
            "nvtx",
            "算子",
            "operator",
            "op",
            "ops",
            "融合",
            "fusion",
            "fused",
            "recompute",
            "重算",
            "重計算",
            "checkpointing",
        ],
        &[
            (Category::Share, "kernel_share", "%"),
            (Category::Time, "kernel_ns", "ms"),
            (Category::Count, "ranges", "count"),
        ],
    ),
    (
        "kernels",
        &["kernel", "核心", "gemm", "matmul", "flash", "attention", "cublas", "cutlass", "launch"],
        &[
            (Category::Count, "count", "count"),
            (Category::Time, "total_ns", "ms"),
            (Category::Share, "total_ns", "ms"),
        ],
    ),
    (
        "overlap",
        &[
            "nccl",
            "通訊",
            "通信",
            "communication",
            "comm",
            "all-reduce",
            "allreduce",
            "all-gather",
            "allgather",
            "reduce-scatter",
            "collective",
            "exposed",
            "遮蔽",
            "overlap",
            "重疊",
            "hidden",
        ],
        &[
            (Category::Share, "nccl_only_ns / total_ns", "%"),
            (Category::Time, "nccl_only_ns", "ms"),
        ],
    ),
    (
        "overlap",
        &["idle", "閒置", "空閒", "bubble", "氣泡"],
        &[(Category::Share, "idle_ns / total_ns", "%"), (Category::Time, "idle_ns", "ms")],
    ),
];

/// Every measure a draft can propose, as (analysis, formula, unit): what the registry must
/// still declare (tests/suite/growth.rs).
pub fn candidate_measures() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    ANALYSES.iter().flat_map(|(a, _, fields)| fields.iter().map(move |(_, f, u)| (*a, *f, *u)))
}
