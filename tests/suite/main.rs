//! The integration tests, as one test binary: one module per area (`cargo test --test suite
//! kineto::` runs the PyTorch profiler tests), `util` shared by all. One binary links the
//! library once, where a file per area linked it forty times.
//!
//! Every test here runs in one process, two or more at a time: a test passes what it changes to
//! the programs it starts (their environment, their working folder) and never changes its own
//! process's environment or working folder.

mod ab_fixture;
mod ab_rules;
mod bad_corpus;
mod bad_input;
mod battery;
mod battery_mcp;
mod blog;
mod brief;
mod check;
mod ci_mode;
mod compare;
mod copies_tables;
mod day26_fixture;
mod day26_query;
mod draft;
mod engines;
mod escaping;
mod eval;
mod evidence_contract;
mod evidence_schema;
mod experiment;
mod extract;
mod fuzz;
mod gate_grid;
mod growth;
mod help;
mod issue_22;
mod issue_38;
mod kineto;
mod markdown_parsers;
mod mcp;
mod nccl_matching;
mod nccl_streams;
mod nvtx_tables;
mod nvtx_windows;
mod plan;
mod provenance;
mod ratio;
mod real_traces;
mod render;
mod report_honesty;
mod report_sets;
mod rules;
mod schema;
mod trace_sets;
mod util;

// The export DDL and the random stream of the fixture generators (`fixtures/`), loaded once for
// the modules that run a generator.
#[path = "../../fixtures/nsys_ddl.rs"]
mod nsys_ddl;
#[path = "../../fixtures/splitmix.rs"]
mod splitmix;

mod zh_tw;

/// A test file directly under `tests/` would build as a test binary of its own, linking the
/// library once more, and a file here without its `mod` line would never be built: each area is
/// a file of `tests/suite/` declared above.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let tests = util::manifest_dir().join("tests");
    let rust = |dir: &std::path::Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rs"))
            .collect();
        names.sort();
        names
    };
    assert_eq!(rust(&tests), Vec::<String>::new(), "test files outside tests/suite/");
    let main = std::fs::read_to_string(tests.join("suite/main.rs")).unwrap();
    for file in rust(&tests.join("suite")) {
        let module = file.trim_end_matches(".rs");
        if module != "main" {
            assert!(
                main.contains(&format!("\nmod {module};\n")),
                "tests/suite/{file}: no `mod {module};`"
            );
        }
    }
}
