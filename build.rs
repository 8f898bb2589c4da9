//! Records the commit the tool is built from, for the provenance of every report: the full
//! hash of `HEAD`, with `+modified` when tracked sources differ from it. A build outside a git
//! checkout (a crates.io package) records none, unless the packager sets
//! `VERDICT_BUILD_COMMIT` itself.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).env("GIT_OPTIONAL_LOCKS", "0").output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// What the build records the state of.
const SOURCES: &[&str] = &["src", "templates", "build.rs", "Cargo.toml", "Cargo.lock"];

fn main() {
    println!("cargo::rerun-if-env-changed=VERDICT_BUILD_COMMIT");
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let commit = match std::env::var("VERDICT_BUILD_COMMIT") {
        Ok(given) => Some(given),
        Err(_) => head(),
    };
    match commit.filter(|c| !c.is_empty()) {
        Some(c) => {
            println!("cargo::rustc-env=VERDICT_BUILD_COMMIT={c}");
            println!("cargo::rustc-env=VERDICT_VERSION={version} (build {c})");
        }
        None => println!("cargo::rustc-env=VERDICT_VERSION={version}"),
    }
}

/// `HEAD`'s hash with `+modified` when tracked sources differ from it; None outside git.
fn head() -> Option<String> {
    for s in SOURCES {
        println!("cargo::rerun-if-changed={s}");
    }
    // A new commit moves HEAD or the branch it names, as a loose ref or in `packed-refs` (in
    // the common folder, which a worktree shares). Only files that exist are named: cargo
    // takes a missing one for a change, and would build the crate again every time.
    if let (Some(dir), Some(common)) =
        (git(&["rev-parse", "--git-dir"]), git(&["rev-parse", "--git-common-dir"]))
    {
        let mut watched = vec![format!("{dir}/HEAD"), format!("{common}/packed-refs")];
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.push(format!("{common}/{head}"));
        }
        for f in watched.iter().filter(|f| std::path::Path::new(f).exists()) {
            println!("cargo::rerun-if-changed={f}");
        }
    }
    let commit = git(&["rev-parse", "HEAD"]).filter(|c| c.len() == 40)?;
    let mut status = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    status.extend(SOURCES);
    let modified = git(&status).is_some_and(|s| !s.is_empty());
    Some(format!("{commit}{}", if modified { "+modified" } else { "" }))
}
