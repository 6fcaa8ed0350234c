//! The MCP server (docs/mcp.md), black-box: the real binary over HTTP on SQLite and on
//! PostgreSQL, driven on the wire and by the reference client (`mcp`, Python).

#[allow(dead_code)]
#[macro_use]
mod common;

mod mcp {
    mod oauth;
    mod refusals;
    mod rmcp;
    mod sdk;
    mod sessions;
    mod trace;
    pub mod wire;
}
