//! The relay's machine-readable description: every method with its params (type, whether
//! required, a sample value), committed as docs/schemas/relay.json. The unit tests hold the
//! committed file equal to [`describe`], the method list equal to the relay's, and each entry
//! equal to what the relay's params parser accepts and refuses; clients check themselves
//! against the file, or ask `relay/describe`.

use serde_json::{Map, Value, json};

use crate::connection::{CANCEL, CANCELLABLE, EVENT, RELAY_VERSION};
use crate::methods::METHODS;

/// One param: name, JSON type, required, and a sample the relay's parser accepts.
pub(crate) type Param = (&'static str, &'static str, bool, &'static str);

/// Every method, in the order of [`METHODS`], with a one-line summary and its params.
pub(crate) const DESCRIPTION: &[(&str, &str, &[Param])] = &[
    (
        "relay/initialize",
        "First request: the relay's version and capabilities",
        &[
            ("protocolVersion", "string", true, r#""2.0.0""#),
            ("client", "object", false, r#"{"name":"x","version":"1"}"#),
            ("uiCacheKey", "string", false, r#""cli""#),
        ],
    ),
    (
        "relay/describe",
        "This description (docs/schemas/relay.json)",
        &[],
    ),
    ("plugins/list", "Installed bundles", &[]),
    (
        "plugins/install",
        "Validate and store a bundle; runs nothing",
        &[
            ("source", "string", true, r#""/nonexistent/bundle""#),
            ("trust", "boolean", false, "false"),
            ("enable", "boolean", false, "false"),
            (
                "marketplace",
                "string",
                false,
                r#""/nonexistent/marketplace.json""#,
            ),
        ],
    ),
    (
        "plugins/uninstall",
        "Stop and remove a bundle and its data",
        &[
            ("id", "string", true, r#""x""#),
            ("keepData", "boolean", false, "false"),
        ],
    ),
    ("plugins/trust", "Trust the installed content", ID),
    ("plugins/untrust", "Withdraw trust", ID),
    (
        "plugins/enable",
        "Enable a bundle, or one component, for the user or a project",
        ID_PROJECT_COMPONENT,
    ),
    (
        "plugins/disable",
        "Disable a bundle, or one component, for the user or a project",
        ID_PROJECT_COMPONENT,
    ),
    (
        "plugins/inherit",
        "Make a project follow the user's choice (project required), or drop one component's choice in the scope",
        ID_PROJECT_COMPONENT,
    ),
    (
        "plugins/reset",
        "Clear one bundle's policy, or all",
        &[("id", "string", false, r#""x""#)],
    ),
    (
        "plugins/plan",
        "Plan a policy change",
        &[
            ("id", "string", true, r#""x""#),
            ("project", "string", false, r#""/nonexistent/project""#),
            ("change", "object", true, r#"{"action":"enable"}"#),
            ("component", "string", false, r#""skill:x""#),
        ],
    ),
    (
        "plugins/apply",
        "Apply a plan while its revisions are current",
        &[(
            "plan",
            "object",
            true,
            r#"{"format":1,"id":"x","project":null,"change":{"action":"enable"},"revisions":{"graph":"1","config":"1","project":null},"impact":{"starts":[],"stops":[],"reloads":[],"dependents":[],"resources":[]}}"#,
        )],
    ),
    (
        "plugins/runtimePid",
        "The live runtime's pid or null",
        ID_PROJECT,
    ),
    (
        "plugins/refresh",
        "Look at the store and policy again now; what changed, or null",
        &[],
    ),
    (
        "health/status",
        "Every plugin runtime's health, per bundle and realm",
        &[],
    ),
    (
        "plugins/developerStatus",
        "The store's development bundles and their last reload",
        &[],
    ),
    (
        "plugins/setDeveloperMode",
        "Develop a working directory (installed, trusted while held, watched), or end developer mode",
        &[
            ("enabled", "boolean", true, "false"),
            ("path", "string", false, r#""/nonexistent/bundle""#),
        ],
    ),
    (
        "plugins/reloadDevelopment",
        "Collect development bundles again and reload the ones that changed and validate",
        &[("id", "string", false, r#""x""#)],
    ),
    ("realm/catalog", "The realm's catalog", PROJECT),
    ("realm/commands", "The realm's commands", PROJECT),
    (
        "command/invoke",
        "Invoke a command in a realm",
        &[
            ("command", "string", true, r#""x.y""#),
            ("args", "any", false, "{}"),
            ("project", "string", false, r#""/nonexistent/project""#),
        ],
    ),
    ("ui/catalog", "The realm's UI descriptors per slot", PROJECT),
    (
        "ui/invoke",
        "Activate a UI descriptor",
        &[
            ("id", "string", true, r#""x""#),
            ("ui", "string", true, r#""y""#),
            ("project", "string", false, r#""/nonexistent/project""#),
            ("sessionId", "string", false, r#""s""#),
            ("operation", "string", false, r#""render""#),
            ("actionId", "string", false, r#""a""#),
            ("context", "any", false, "{}"),
        ],
    ),
    ("lsp/list", "Every language mapping of a realm", PROJECT),
    (
        "lsp/resolve",
        "What a language resolves to in a project",
        &[
            ("language", "string", true, r#""zig""#),
            ("project", "string", true, r#""/nonexistent/project""#),
        ],
    ),
    (
        "mcp/list",
        "The MCP servers a session in the realm is composed with; launches nothing",
        &[
            ("project", "string", false, r#""/nonexistent/project""#),
            ("envValues", "boolean", false, "false"),
        ],
    ),
    (
        "skills/list",
        "The skills, prompt commands and subagents a session in the realm is offered",
        PROJECT,
    ),
    (
        "scenes/list",
        "The scene and pipeline files of the realm's enabled bundles, each checked",
        PROJECT,
    ),
    (
        "connectors/list",
        "Declared connectors and whether their provider is supported",
        &[],
    ),
    (
        "connectors/registerProvider",
        "Register this frontend as the adapter of a provider",
        &[("provider", "string", true, r#""example-chat""#)],
    ),
    (
        "connectors/invoke",
        "Invoke a connector operation after every host check",
        &[
            ("id", "string", true, r#""x""#),
            ("connector", "string", true, r#""workspace""#),
            ("operation", "string", true, r#""message.send""#),
            ("input", "any", false, "{}"),
            ("project", "string", false, r#""/nonexistent/project""#),
        ],
    ),
    (
        "events/subscribe",
        "Subscribe to a JSON bus event, connector/event, store/changed or health/changed",
        &[("event", "string", true, r#""x.y""#)],
    ),
    (
        "events/unsubscribe",
        "End a subscription",
        &[("subscription", "integer", true, "1")],
    ),
    (
        "events/publish",
        "Publish a frontend-owned host event",
        &[
            ("name", "string", true, r#""skills/changed""#),
            ("payload", "any", false, "{}"),
        ],
    ),
    ("hub/marketplaces", "The configured catalogs", &[]),
    (
        "hub/addMarketplace",
        "Read, validate and add a catalog to the configured ones",
        &[
            (
                "location",
                "string",
                true,
                r#""/nonexistent/marketplace.json""#,
            ),
            ("name", "string", false, r#""x""#),
        ],
    ),
    (
        "hub/removeMarketplace",
        "Remove a configured catalog",
        &[("name", "string", true, r#""x""#)],
    ),
    (
        "hub/search",
        "Catalog entries whose name, description or keywords contain text",
        &[
            ("text", "string", true, r#""x""#),
            (
                "marketplace",
                "string",
                false,
                r#""/nonexistent/marketplace.json""#,
            ),
        ],
    ),
    (
        "hub/outdated",
        "Bundles installed from a catalog compared with its entries",
        &[],
    ),
    (
        "hub/update",
        "Update one or every catalog-installed bundle in place, or review what it would change",
        &[
            ("id", "string", false, r#""x""#),
            ("dryRun", "boolean", false, "false"),
        ],
    ),
];

const ID: &[Param] = &[("id", "string", true, r#""x""#)];
const ID_PROJECT: &[Param] = &[
    ("id", "string", true, r#""x""#),
    ("project", "string", false, r#""/nonexistent/project""#),
];
const ID_PROJECT_COMPONENT: &[Param] = &[
    ("id", "string", true, r#""x""#),
    ("project", "string", false, r#""/nonexistent/project""#),
    ("component", "string", false, r#""skill:x""#),
];
const PROJECT: &[Param] = &[("project", "string", false, r#""/nonexistent/project""#)];

/// The description document (docs/schemas/relay.json).
pub fn describe() -> Value {
    let methods: Vec<Value> = DESCRIPTION
        .iter()
        .map(|(name, summary, params)| {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (param, kind, needed, _) in params.iter() {
                let schema = match *kind {
                    "any" => json!({}),
                    other => json!({ "type": other }),
                };
                properties.insert((*param).to_owned(), schema);
                if *needed {
                    required.push(*param);
                }
            }
            json!({
                "name": name,
                "summary": summary,
                "cancellable": CANCELLABLE.contains(name),
                "params": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                },
            })
        })
        .collect();
    debug_assert_eq!(methods.len(), METHODS.len());
    json!({
        "relay": "c2-relay",
        "protocolVersion": RELAY_VERSION,
        "transport": "JSON-RPC 2.0, one JSON object per line, on stdio or a Unix socket",
        "integers": "64-bit revisions and generations (plan, policy and catalog revisions, store generations) are decimal strings; every JSON number the relay sends is within 2^53",
        "methods": methods,
        "bundleStates": c2_host::BundleState::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "clientNotifications": [{ "name": CANCEL, "params": { "id": "string or integer" } }],
        "serverNotifications": [{
            "name": EVENT,
            "params": ["subscription", "name", "payload", "dropped"],
        }],
        "documentation": "docs/relay.md",
    })
}
