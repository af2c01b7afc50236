//! What bundles contribute beyond commands, each kind in its own module: UI descriptors and
//! `host.actions` (`ui`), connectors (`connectors`), language servers, MCP servers and the
//! session's content library of skills, prompt commands, subagents and scenes (`skills`).
//!
//! A contribution imports the core through `crate::seam` alone and owns its state in an object
//! it creates when it registers (its `install` function, listed in lib.rs's `WIRING`); no core
//! file imports a contribution. A new kind is one more module here with
//! an `install` function and one more line in `WIRING`.

pub(crate) mod connectors;
pub(crate) mod lsp;
pub(crate) mod mcp;
pub(crate) mod skills;
pub(crate) mod ui;
