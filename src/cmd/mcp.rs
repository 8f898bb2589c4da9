//! `verdict mcp`: the MCP server on this process's stdin and stdout.

use std::process::ExitCode;

use crate::cli::McpArgs;

/// Runs `mcp` until the client closes stdin.
pub(super) fn run(args: McpArgs) -> anyhow::Result<ExitCode> {
    let mut server = crate::mcp::Server::new(&args.roots)?;
    // stdout carries the protocol alone; nothing else is printed there.
    server.serve(std::io::stdin().lock(), std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
