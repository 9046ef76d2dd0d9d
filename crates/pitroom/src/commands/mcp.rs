//! `pitroom mcp`: the MCP server on stdio (`pitroom-mcp`), or a host's registration snippet.

use pitroom_core::exit;

use crate::cli::McpArgs;
use crate::output;
use crate::output::say_raw;

pub(super) fn mcp(args: McpArgs) -> i32 {
    if let Some(host) = &args.print_config {
        return match pitroom_mcp::hosts::config_for(host) {
            Ok(text) => {
                say_raw!("{text}");
                exit::OK
            }
            Err(why) => {
                output::error(why);
                exit::USAGE
            }
        };
    }
    let service = match super::service() {
        Ok(s) => s,
        Err(code) => return code,
    };
    match pitroom_mcp::serve_stdio(service) {
        Ok(()) => exit::OK,
        Err(why) => {
            output::error(why);
            exit::REFUSED
        }
    }
}
