//! The reduce on Apache DataFusion, in process: the table `keyed` registered in memory, the
//! analysis's SQL run statement by statement, the marked outputs collected.

use datafusion::prelude::SessionContext;

use super::{EngineError, Outputs, ReduceParams, Tables, statements};

/// Runs `sql` over `tables`, registered in memory under their names.
pub fn run(sql: &str, tables: Tables, params: &ReduceParams) -> Result<Outputs, EngineError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).build().map_err(
            |e| EngineError::new(format!("DataFusion's runtime did not start: {e}"), hint()),
        )?;
    runtime.block_on(async {
        let ctx = SessionContext::new();
        for (name, batch) in tables {
            ctx.register_batch(name, batch).map_err(failed)?;
        }
        let mut out = Outputs::new();
        for s in statements(sql, params) {
            let batches = ctx.sql(&s.sql).await.map_err(failed)?.collect().await.map_err(failed)?;
            if let Some(name) = s.output {
                out.insert(name, batches);
            }
        }
        Ok(out)
    })
}

fn failed(e: datafusion::error::DataFusionError) -> EngineError {
    EngineError::new(format!("DataFusion: {e}"), hint())
}

fn hint() -> String {
    "the reduce's SQL failed on DataFusion: `--engine rust` gives the same evidence; please report the error".into()
}
