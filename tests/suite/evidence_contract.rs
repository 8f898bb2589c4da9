//! The evidence as a contract: `parameters` carry the options' values as given, with one
//! meaning across analyses, and the ledger says what its paths are relative to.

use crate::util;

use serde_json::json;
use util::{fixture, run_json, s};

const DAY26: &str = "day26/megatron.sqlite";

#[test]
fn kernels_parameters_carry_the_filter_options_values() {
    let t = fixture(DAY26);
    let v = run_json(&["query", "kernels", s(&t), "--device", "4", "--match", "flash", "--json"]);
    assert_eq!(v["parameters"]["match"], "flash");
    assert_eq!(v["parameters"]["filter"], "name contains `flash`");
    assert!(v["parameters"].get("regex").is_none(), "{}", v["parameters"]);
    let v = run_json(&["query", "kernels", s(&t), "--device", "4", "--regex", "^flash_", "--json"]);
    assert_eq!(v["parameters"]["regex"], "^flash_");
    assert_eq!(v["parameters"]["filter"], "name matches /^flash_/");
    assert!(v["parameters"].get("match").is_none(), "{}", v["parameters"]);
}

/// `stream` is the `--stream` option's value in both NCCL analyses (a number for one stream,
/// text for `auto`), and the matching rule has a key of its own, the same in both.
#[test]
fn nccl_analyses_share_the_meaning_of_stream_and_match_rule() {
    let t = fixture(DAY26);
    for (stream, want) in [("56", json!(56)), ("auto", json!("auto"))] {
        let skew = run_json(&["query", "nccl-skew", s(&t), "--stream", stream, "--json"]);
        let calls = run_json(&["query", "nccl-calls", s(&t), "--stream", stream, "--json"]);
        for v in [&skew, &calls] {
            assert_eq!(v["parameters"]["stream"], want, "{}: {}", v["analysis"], v["parameters"]);
            assert!(v["parameters"].get("match").is_none(), "{}", v["parameters"]);
        }
        assert_eq!(skew["parameters"]["match_rule"], calls["parameters"]["match_rule"]);
        // The synthetic day26 trace records no NCCL payload and no PyTorch profiler op.
        assert_eq!(skew["parameters"]["match_rule"], "collective-ordinal");
    }
}

/// A comparison of a share keeps its samples in parts per billion and says so; one of a
/// duration keeps them exact.
#[test]
fn a_comparison_says_how_its_samples_were_rounded() {
    let a = fixture("ab/tp4.sqlite");
    let b = fixture("ab/tp8.sqlite");
    let (ta, tb) = (format!("trace={}", a.display()), format!("trace={}", b.display()));
    for (metric, scale, rounding) in [
        ("nccl_only_ns / total_ns", 1_000_000_000, "half away from zero, to 1/metric_scale"),
        ("nccl_only_ns", 1, "none"),
    ] {
        let v = run_json(&[
            "query",
            "compare",
            "--of",
            "overlap",
            "--metric",
            metric,
            "--a",
            &ta,
            "--a",
            "devices=0",
            "--a",
            "nvtx=ProfilerStep#*",
            "--a",
            "index=all",
            "--b",
            &tb,
            "--b",
            "devices=0",
            "--b",
            "nvtx=ProfilerStep#*",
            "--b",
            "index=all",
            "--json",
        ]);
        assert_eq!(v["parameters"]["metric_scale"], scale, "{metric}");
        assert_eq!(v["parameters"]["sample_rounding"], rounding, "{metric}");
    }
}

/// Each trace of the ledger carries its path as the claims file writes it and the folder that
/// path is relative to, beside the path its commands use: both name the same file.
#[test]
fn ledger_paths_say_what_they_are_relative_to() {
    let root = util::manifest_dir();
    for claims in ["claims/day26-profile-blind.yaml", "claims/mfu-2gpu-ab.yaml"] {
        let text = std::fs::read_to_string(root.join(claims)).unwrap();
        let doc: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let v = util::run_json_in(Some(&root), &["check", claims, "--json"]);
        for t in v["traces"].as_array().unwrap() {
            let name = t["name"].as_str().unwrap();
            assert_eq!(t["written"], doc["traces"][name]["path"], "{claims}: {t}");
            assert_eq!(t["relative_to"], "claims", "{claims}");
            let via_claims = root.join("claims").join(t["written"].as_str().unwrap());
            let via_cwd = root.join(t["path"].as_str().unwrap());
            assert_eq!(
                std::fs::canonicalize(via_claims).unwrap(),
                std::fs::canonicalize(via_cwd).unwrap(),
                "{claims}: {name}"
            );
        }
    }
}
