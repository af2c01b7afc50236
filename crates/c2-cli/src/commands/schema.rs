//! `schema`: the JSON Schema for plugin.json, for editors. One JSON document in both formats.

use std::process::ExitCode;

use crate::CmdResult;
use crate::output::Out;

pub(crate) fn run(out: &mut Out) -> CmdResult {
    out.print_json(&c2_manifest::plugin_json_schema());
    Ok(ExitCode::SUCCESS)
}
