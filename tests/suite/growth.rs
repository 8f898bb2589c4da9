//! Growth that shows. Functions over 150 lines fail clippy (Cargo.toml `[lints]`,
//! clippy.toml); these tests hold what clippy does not: the size of a source file, and the
//! lists derived from the analysis registry.

use crate::util::{manifest_dir, rs_files};

/// The longest a file of `src/` may be.
const FILE_LINES: usize = 1_500;

#[test]
fn no_source_file_grows_past_the_limit() {
    let root = manifest_dir();
    let mut faults = Vec::new();
    for p in rs_files(&root.join("src")) {
        let rel = p.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let lines = std::fs::read_to_string(&p).unwrap().lines().count();
        if lines > FILE_LINES {
            faults.push(format!("{rel}: {lines} lines, over {FILE_LINES}: cut it along a seam"));
        }
    }
    assert!(faults.is_empty(), "{faults:#?}");
}

/// A post names every analysis a claim can bind in words of its language; one added to the
/// registry without them would show its id to a blog reader.
#[test]
fn every_registered_analysis_has_its_words_in_every_language() {
    let mut names: Vec<&str> =
        verdict::analysis::ANALYSES.iter().filter(|a| a.is_query()).map(|a| a.name).collect();
    names.push(verdict::analysis::compare::SPEC.name);
    for lang in ["en", "zh-TW"] {
        let path = manifest_dir().join(format!("templates/i18n/{lang}.toml"));
        let table: toml::Table = std::fs::read_to_string(&path).unwrap().parse().unwrap();
        for name in &names {
            let key = format!("blog.analysis.{name}");
            let words = table.get(&key).and_then(toml::Value::as_str);
            assert!(
                words.is_some_and(|w| !w.trim().is_empty() && w != *name),
                "{lang}: `{key}` missing for the registered analysis `{name}`"
            );
        }
    }
}

/// `verdict draft` proposes measures from a list of its own: each must name an analysis a
/// claim binds and a formula over fields that analysis declares, in a unit of the claims
/// file, so a renamed field or a removed analysis fails here, not in a drafted file a reviewer
/// is handed.
#[test]
fn every_measure_draft_proposes_is_one_the_registry_declares() {
    let mut n = 0;
    for (name, formula, unit) in verdict::draft::candidate_measures() {
        n += 1;
        let spec = verdict::analysis::ANALYSES
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("draft proposes `{name}`, which is not registered"));
        assert!(spec.is_query(), "`{name}` is not an analysis a claim binds");
        let expr = verdict::formula::Expr::parse(formula)
            .unwrap_or_else(|e| panic!("`{name}`: `{formula}` does not parse: {e:?}"));
        for v in expr.vars() {
            let declared = spec.field(&v).is_some() || spec.ratios.iter().any(|(r, _)| *r == v);
            assert!(declared, "`{name}`: `{formula}` reads `{v}`, which it does not declare");
        }
        assert!(
            verdict::claims::Unit::parse(unit).is_some(),
            "`{name}`: `{formula}` in `{unit}`, not a unit of a claims file"
        );
    }
    assert!(n >= 10, "{n} candidate measures");
}

/// The README's table of analyses has one row per analysis of the registry (a query, the
/// coverage of `inspect`, and `compare`), no more and no fewer.
#[test]
fn the_readme_lists_every_registered_analysis() {
    let readme = std::fs::read_to_string(manifest_dir().join("README.md")).unwrap();
    let table = readme
        .split("| analysis | what | denominator |")
        .nth(1)
        .expect("the README has its table of analyses");
    let listed: std::collections::BTreeSet<&str> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| l.split('`').nth(1))
        .collect();
    let registered: std::collections::BTreeSet<&str> = verdict::analysis::ANALYSES
        .iter()
        .chain(verdict::analysis::DERIVED)
        .map(|a| a.name)
        .collect();
    assert_eq!(listed, registered, "README's analyses against the registry");
}

/// `cargo build` and `cargo test` resolve every crate with the same features, so one build
/// serves both: a dependency the tests add that turns on a feature the build does not have
/// would make each of them compile that crate (and all that depend on it) again. Read from
/// `cargo tree` over the lock file, with and without the dev-dependencies, for each set of
/// features the tests are run with.
#[test]
fn build_and_test_resolve_the_same_features() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Each crate with the feature sets it is built with: one for the target, and one for the
    // host where a build script or a derive macro uses it too.
    type Resolved = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;
    let tree = |extra: &[&str]| -> Resolved {
        let out = std::process::Command::new(&cargo)
            .args(["tree", "--locked", "--prefix", "none", "-f", "{p}|{f}"])
            .args(extra)
            .current_dir(manifest_dir())
            .output()
            .expect("cargo runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut resolved = Resolved::new();
        for (p, f) in String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.split_once('|'))
        {
            let p = p.split(" (").next().unwrap_or(p).to_string();
            resolved.entry(p).or_default().insert(f.trim_end_matches(" (*)").to_string());
        }
        resolved
    };
    for features in [&[][..], &["--no-default-features"][..]] {
        let build = tree(&[features, &["-e", "no-dev"]].concat());
        let test = tree(features);
        let differ: Vec<String> = build
            .iter()
            .filter(|(p, f)| test.get(*p).is_some_and(|t| t != *f))
            .map(|(p, f)| format!("{p}: build {f:?}, test {:?}", test[p]))
            .collect();
        assert!(
            differ.is_empty(),
            "{features:?}: declare the test build's features in [dependencies] \
             (`cargo tree -e features -i CRATE` names who turns each on): {differ:#?}"
        );
    }
}
