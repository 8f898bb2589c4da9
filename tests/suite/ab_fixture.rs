//! The committed A/B pair and runs are exactly what their generator writes, and its steps are the lengths
//! the generator lays out.

#[path = "../../fixtures/ab/generate.rs"]
#[allow(dead_code)]
mod generate;
// What the generator reads as `super::nsys_ddl` and `super::splitmix`.
use crate::{nsys_ddl, splitmix};

#[test]
fn committed_pair_matches_the_generator() {
    let dir = tempfile::tempdir().unwrap();
    for side in &generate::SIDES {
        let fresh = dir.path().join(format!("{}.sqlite", side.stem));
        generate::write(&fresh, side).unwrap();
        let committed = std::fs::read(format!(
            "{}/fixtures/ab/{}.sqlite",
            env!("CARGO_MANIFEST_DIR"),
            side.stem
        ))
        .unwrap();
        assert!(
            committed == std::fs::read(&fresh).unwrap(),
            "fixtures/ab/{}.sqlite drifted: run `cargo run --example gen-ab`",
            side.stem
        );
    }
}

#[test]
fn committed_runs_match_the_generator() {
    let dir = tempfile::tempdir().unwrap();
    let runs = generate::runs();
    assert_eq!(runs.len(), 10);
    for side in &runs {
        let fresh = dir.path().join(format!("{}.sqlite", side.stem));
        generate::write(&fresh, side).unwrap();
        let committed = std::fs::read(format!(
            "{}/fixtures/ab/runs/{}.sqlite",
            env!("CARGO_MANIFEST_DIR"),
            side.stem
        ))
        .unwrap();
        assert!(
            committed == std::fs::read(&fresh).unwrap(),
            "fixtures/ab/runs/{}.sqlite drifted: run `cargo run --example gen-ab`",
            side.stem
        );
    }
}
