//! `pitroom mcp`: the MCP server on stdio (`pitroom-mcp`), or a host's registration snippet.

use pitroom_core::exit::Exit;

use super::Outcome;
use crate::cli::McpArgs;
use crate::error::CliError;
use crate::output::say_raw;

pub(super) fn mcp(args: McpArgs) -> Outcome {
    if let Some(host) = &args.print_config {
        let text = pitroom_mcp::hosts::config_for(host).map_err(CliError::usage)?;
        say_raw!("{text}");
        return Ok(Exit::Ok);
    }
    let service = super::service()?;
    pitroom_mcp::serve_stdio(service).map_err(CliError::refused)?;
    Ok(Exit::Ok)
}
