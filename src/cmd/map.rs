//! `verdict map` (hidden): the map of a cluster run, on a worker. Reads a shard of a set's
//! files as the whole set would (its clock, its parameters), runs the per-rank scan of the
//! analysis, the same functions the process runs, and prints each rank's rows as JSON lines.
//! It reduces nothing: the process that started the run does.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;

use crate::analysis;
use crate::cli::{Cli, Command, MapArgs};

/// Runs `map`.
pub(super) fn run(args: MapArgs) -> anyhow::Result<ExitCode> {
    let argv = std::iter::once("verdict".to_string()).chain(args.query.iter().cloned());
    let cli = Cli::try_parse_from(argv).map_err(|e| {
        crate::Hinted::new(
            format!("`map` takes `query ANALYSIS [OPTIONS] FILES...` ({})", e.kind()),
            "this verdict and the one that started the run differ: run both from one release",
        )
    })?;
    let Command::Query(q) = cli.command else {
        return Err(crate::Hinted::new(
            "`map` takes `query ANALYSIS [OPTIONS] FILES...`",
            "this verdict and the one that started the run differ: run both from one release",
        )
        .into());
    };
    let mut plan = crate::plan::QueryPlan::from_command(&q)?;
    plan.params.tile = args.tile;
    plan.params.counted_from = args.counted_from;
    let ctx = match args.origin {
        None => plan.load()?.1,
        Some(origin) => {
            let (files, _) = crate::plan::expand(&plan.traces)?;
            analysis::set::load_set_on(
                &files,
                &plan.scan_filter(),
                None,
                &plan.needs(),
                &mut |_| {},
                Some(origin),
            )
            .map_err(|e| {
                let hint = e.hint().unwrap_or_default();
                crate::Hinted::new(format!("cannot read trace set: {e}"), hint)
            })?
        }
    };
    let lines = match plan.spec.name {
        "nccl-skew" => analysis::nccl_skew::map_rows(&ctx, &plan.params),
        "overlap" => analysis::overlap::map_rows(&ctx, &plan.params),
        other => {
            return Err(crate::Hinted::new(
                format!("`{other}` has no map on a cluster"),
                "`--cluster` runs nccl-skew and overlap",
            )
            .into());
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for l in &lines {
        serde_json::to_writer(&mut out, l).context("cannot write the map's rows")?;
        out.write_all(b"\n").context("cannot write the map's rows")?;
    }
    out.flush().context("cannot write the map's rows")?;
    Ok(ExitCode::SUCCESS)
}
