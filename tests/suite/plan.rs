//! The reproducing command of every query of the example audits is its query plan printed
//! back: parsed as `verdict query` parses it, it gives the same plan (the same words again)
//! and, run, the same evidence. An option that changes the evidence (expected devices, an NVTX
//! domain, a stream map...) cannot be left out of a report's command without failing here.

use crate::util;

use std::path::PathBuf;

use clap::Parser;
use verdict::cli::{Cli, Command};
use verdict::plan::QueryPlan;

/// The example claims files whose traces are all on this machine (the ones over the shared
/// public traces are left out where those are absent).
fn example_claims() -> Vec<PathBuf> {
    let dir = util::manifest_dir().join("claims");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("claims folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_reproducing_command_parses_back_to_its_plan_and_its_evidence() {
    let mut checked = 0;
    let mut files_checked = 0;
    for file in example_claims() {
        let Ok(set) = verdict::claims::load(&file) else {
            // Its traces are not here (the shared public traces).
            continue;
        };
        if set.traces.iter().any(|t| match &t.set {
            None => !t.resolved.exists(),
            Some(files) => files.iter().any(|f| !f.exists()),
        }) {
            continue;
        }
        files_checked += 1;
        let audit = verdict::audit::run(set, &mut |_, _| {});
        for entry in audit.ledger.iter().chain(&audit.context) {
            let Some(want) = &entry.evidence else { continue };
            let cli = Cli::try_parse_from(&entry.argv).unwrap_or_else(|e| {
                panic!("{}: `{}` does not parse: {e}", file.display(), entry.command)
            });
            let q = match cli.command {
                Command::Query(q) if q.compare.is_none() => q,
                // `verdict inspect` and `query compare` have tests of their own.
                _ => continue,
            };
            let plan = QueryPlan::from_command(&q).expect("a plan");
            assert_eq!(plan.command_words(), entry.argv, "{}", file.display());
            let (_, ctx) = plan.load().expect("the trace loads");
            let got = plan.run(&ctx).expect("the query runs");
            let (got, want) =
                (serde_json::to_value(&got).unwrap(), serde_json::to_value(want).unwrap());
            for key in
                ["analysis", "window", "scope", "parameters", "values", "rows", "notes", "samples"]
            {
                assert_eq!(got[key], want[key], "{}: {key} of `{}`", file.display(), entry.command);
            }
            checked += 1;
        }
    }
    // Three claims files are over fixtures of this repository (day26, h100, mfu, tp).
    assert!(files_checked >= 3, "only {files_checked} claims files had their traces");
    assert!(checked >= 20, "only {checked} commands were checked");
}
