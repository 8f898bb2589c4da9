//! The committed day26 trace is exactly what its generator writes.

#[path = "../../fixtures/day26/generate.rs"]
#[allow(dead_code)]
mod generate;
// What the generator reads as `super::nsys_ddl` and `super::splitmix`.
use crate::{nsys_ddl, splitmix};

#[test]
fn committed_fixture_matches_the_generator() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("megatron.sqlite");
    generate::write(&fresh).unwrap();
    let committed =
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/day26/megatron.sqlite"))
            .unwrap();
    let regenerated = std::fs::read(&fresh).unwrap();
    assert!(
        committed == regenerated,
        "fixtures/day26/megatron.sqlite drifted: run `cargo run --example gen-day26`"
    );
}
