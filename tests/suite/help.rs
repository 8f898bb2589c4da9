//! The `--help` texts: a snapshot per command, so a change to the CLI is seen in review.

use assert_cmd::Command;

fn help(args: &[&str]) -> String {
    let out = Command::cargo_bin("verdict")
        .unwrap()
        .args(args)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn help_texts() {
    for (name, args) in [
        ("verdict", vec![]),
        ("inspect", vec!["inspect"]),
        ("query-overlap", vec!["query", "overlap"]),
        ("query-kernels", vec!["query", "kernels"]),
        ("query-nccl-skew", vec!["query", "nccl-skew"]),
        ("query-nccl-calls", vec!["query", "nccl-calls"]),
        ("query-copies", vec!["query", "copies"]),
        ("query-nvtx", vec!["query", "nvtx"]),
        ("query-compare", vec!["query", "compare"]),
        ("check", vec!["check"]),
        ("verify", vec!["verify"]),
        ("draft", vec!["draft"]),
        ("eval", vec!["eval"]),
        ("schema", vec!["schema"]),
        ("render", vec!["render"]),
        ("templates-eject", vec!["templates", "eject"]),
        ("doctor", vec!["doctor"]),
    ] {
        insta::assert_snapshot!(name, help(&args));
    }
}

#[test]
fn help_states_the_exit_codes() {
    let h = help(&[]);
    assert!(
        h.contains("0 success")
            && h.contains("1 audit failed under --strict")
            && h.contains("2 error")
    );
}

/// `verdict analyses`: every analysis with its parameters and fields, from the registry.
#[test]
fn analyses_listing() {
    let out = Command::cargo_bin("verdict")
        .unwrap()
        .arg("analyses")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    insta::assert_snapshot!("analyses", String::from_utf8(out.stdout).unwrap());
}
