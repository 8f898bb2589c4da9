//! Whether the PDF and PNG checks can run: typst with the CJK font.

use std::process::Command;

/// The typst program the renderer runs (`TYPST_BIN`, else `typst` on the PATH).
pub(crate) fn typst_bin() -> std::ffi::OsString {
    std::env::var_os("TYPST_BIN").unwrap_or_else(|| "typst".into())
}

/// Whether typst with the CJK font can be used; CI sets `VERDICT_REQUIRE_TYPST`, so that a
/// missing typst fails the run instead of skipping `what`.
pub(crate) fn typst_ready(what: &str) -> bool {
    let ok = Command::new(typst_bin()).arg("fonts").output().is_ok_and(|o| {
        o.status.success()
            && String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == "Noto Sans CJK TC")
    });
    if !ok && std::env::var_os("VERDICT_REQUIRE_TYPST").is_some() {
        panic!("VERDICT_REQUIRE_TYPST is set but typst with Noto Sans CJK TC is not available");
    }
    if !ok {
        eprintln!("skipping {what}: typst with Noto Sans CJK TC is not installed");
    }
    ok
}
