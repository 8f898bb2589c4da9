//! `verdict query ...` and `verdict analyses`.

use std::process::ExitCode;

use super::print_json;
use super::table;
use crate::analysis::{self, ANALYSES, show};
use crate::cli::QueryCommand;

/// Runs one query.
pub(crate) fn run(q: QueryCommand) -> anyhow::Result<ExitCode> {
    let ev = crate::plan::evidence(&q)?;
    if q.json {
        print_json(&ev)?;
    } else {
        super::emit(&show::render(&ev, table::width()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `verdict analyses`.
pub(crate) fn list_analyses() -> anyhow::Result<ExitCode> {
    let width = table::width();
    let mut s = String::new();
    for a in ANALYSES.iter().chain(analysis::DERIVED) {
        s += &table::hang(&format!("{}  ", a.name), a.summary, 2, width);
        if !a.params.is_empty() {
            let names: Vec<&str> = a.params.iter().map(|p| p.name).collect();
            let params = format!("window, semantics, devices, {}", names.join(", "));
            s += &table::hang("  parameters: ", &params, 14, width);
        }
        for f in a.fields {
            let first = format!("  {:<22} {:<6} {:<16} ", f.name, f.unit.as_str(), f.kind.key());
            s += &table::hang(&first, f.definition, 49, width);
        }
        s.push('\n');
    }
    super::emit(&s)?;
    Ok(ExitCode::SUCCESS)
}
