//! The stable diagnostic codes. Tools may match on them; renaming one is a breaking change.

/// Every code any validator in this crate emits, with what it means.
pub const CODES: &[(&str, &str)] = &[
    // Parsing (every document)
    (
        "invalid-json",
        "the text is not JSON; the parse stops at the first syntax error",
    ),
    ("duplicate-key", "an object has the same key twice"),
    // Hidden text (every document)
    (
        "bidi-control",
        "a bidirectional control character reorders how text is displayed (warning)",
    ),
    (
        "invisible-character",
        "an invisible or format character hides content (warning)",
    ),
    (
        "hidden-character-in-identifier",
        "a name, command id, component id or server name holds a hidden character",
    ),
    (
        "byte-order-mark",
        "the file starts with a UTF-8 byte-order mark",
    ),
    (
        "nesting-too-deep",
        "arrays and objects (or YAML collections) nest deeper than the depth limit",
    ),
    // Shape (every document)
    ("wrong-type", "a value has the wrong JSON type"),
    ("missing-field", "a required field is absent"),
    (
        "unknown-key",
        "a closed object has a key it does not define",
    ),
    // plugin.json root
    (
        "unknown-root-key",
        "plugin.json has a root key outside the closed set",
    ),
    (
        "runtime-at-root",
        "`runtime` is at the root instead of under extensions.dev.codetwo",
    ),
    ("schema-missing", "plugin.json has no `$schema`"),
    (
        "schema-unsupported",
        "`$schema` is not the Agent Plugins 1.0.0 schema URL",
    ),
    ("name-invalid", "`name` breaks the Agent Plugins name rules"),
    ("name-too-long", "`name` is longer than the limit"),
    (
        "version-not-semver",
        "`version` is not SemVer (warning in plugin.json)",
    ),
    (
        "extension-not-object",
        "an `extensions` namespace is not an object",
    ),
    ("codetwo-missing", "`extensions.dev.codetwo` is absent"),
    (
        "standard-version-unsupported",
        "`standardVersion` is not 1.2.0",
    ),
    // commands
    ("commands-too-many", "more commands than the limit"),
    ("command-id-invalid", "a command id is not namespace.verb"),
    (
        "command-id-too-long",
        "a command id is longer than the limit",
    ),
    ("command-id-duplicate", "two commands share an id"),
    (
        "command-namespace-reserved",
        "a command claims a host-owned namespace",
    ),
    ("title-empty", "a command title is empty or whitespace"),
    ("title-too-long", "a command title is longer than the limit"),
    (
        "description-too-long",
        "a command or ui description is longer than the limit",
    ),
    ("args-schema-not-object", "`argsSchema` is not an object"),
    (
        "args-schema-unknown-draft",
        "`argsSchema.$schema` names an unknown draft",
    ),
    (
        "args-schema-remote-ref",
        "`argsSchema` refers outside itself",
    ),
    (
        "args-schema-invalid",
        "`argsSchema` is not a valid JSON Schema",
    ),
    // runtime and language-server executables
    ("command-empty", "an executable `command` is empty"),
    (
        "command-absolute",
        "an executable `command` is an absolute path",
    ),
    (
        "command-parent-dir",
        "an executable `command` has a `..` segment",
    ),
    (
        "protocol-invalid",
        "`runtime.protocol` is not a SemVer version",
    ),
    (
        "protocol-unsupported",
        "`runtime.protocol` has a major other than 1",
    ),
    (
        "env-key-invalid",
        "an environment variable name is empty or has `=` or NUL",
    ),
    ("inject-empty", "an inject entry is empty"),
    ("inject-duplicate", "an inject entry is listed twice"),
    ("scope-support-empty", "`scopeSupport` is an empty array"),
    (
        "scope-unknown",
        "`scopeSupport` names a scope other than user or project",
    ),
    ("scope-duplicate", "`scopeSupport` lists a scope twice"),
    // cross-rules
    ("runtime-without-commands", "a runtime declares no commands"),
    (
        "commands-without-runtime",
        "commands are declared without a runtime",
    ),
    (
        "ui-without-runtime",
        "ui actions are declared without a runtime",
    ),
    (
        "connectors-without-runtime",
        "connectors are declared without a runtime",
    ),
    // ui
    ("ui-id-invalid", "a ui id is not a safe id"),
    ("ui-id-duplicate", "two ui entries share an id"),
    ("ui-slot-unknown", "a ui slot is not one of the six"),
    ("label-empty", "a ui label is empty or whitespace"),
    ("label-too-long", "a ui label is longer than the limit"),
    (
        "ui-command-unknown",
        "a ui entry names a command not declared in this bundle",
    ),
    (
        "ui-input-too-large",
        "a ui input serializes larger than the limit",
    ),
    (
        "command-timeout-not-integer",
        "a runtime commandTimeoutMs is not an integer",
    ),
    (
        "command-timeout-out-of-range",
        "a runtime commandTimeoutMs is outside 1..=3600000",
    ),
    ("ui-order-not-integer", "a ui order is not an integer"),
    (
        "ui-order-out-of-range",
        "a ui order is outside the allowed range",
    ),
    // connectors
    ("connector-id-invalid", "a connector id is not a safe id"),
    ("connector-id-duplicate", "two connectors share an id"),
    (
        "provider-invalid",
        "a connector provider is not a safe identifier",
    ),
    (
        "connector-command-unknown",
        "a connector names a command not declared in this bundle",
    ),
    ("capabilities-empty", "a connector declares no capabilities"),
    (
        "capability-unknown",
        "a connector capability is not one of the six",
    ),
    (
        "capability-duplicate",
        "a connector lists a capability twice",
    ),
    // language servers
    (
        "language-server-id-invalid",
        "a language server id is not a safe id",
    ),
    (
        "language-server-id-duplicate",
        "two language servers share an id",
    ),
    ("languages-empty", "a language server lists no languages"),
    (
        "languages-too-many",
        "a language server lists more languages than the limit",
    ),
    ("language-empty", "a language id is empty"),
    (
        "language-duplicate",
        "a language is listed twice, ignoring case",
    ),
    // SKILL.md frontmatter
    (
        "frontmatter-missing",
        "SKILL.md does not start with a `---` block",
    ),
    (
        "frontmatter-unterminated",
        "the frontmatter block has no closing `---`",
    ),
    (
        "frontmatter-syntax",
        "the frontmatter is not one valid YAML 1.2 document",
    ),
    (
        "frontmatter-not-mapping",
        "the frontmatter document is not a mapping",
    ),
    (
        "frontmatter-key-not-string",
        "a frontmatter mapping key is a mapping or a sequence",
    ),
    (
        "frontmatter-too-large",
        "the frontmatter is larger than MAX_FRONTMATTER_BYTES or holds more than MAX_YAML_NODES values",
    ),
    (
        "frontmatter-aliases-too-large",
        "the frontmatter's aliases stand for more than MAX_YAML_NODES values",
    ),
    (
        "frontmatter-unknown-key",
        "a frontmatter key is not an Agent Skills key (warning)",
    ),
    ("skill-name-missing", "the frontmatter has no `name`"),
    (
        "skill-name-invalid",
        "a skill `name` breaks the Agent Skills charset rules",
    ),
    (
        "skill-name-too-long",
        "a skill `name` is longer than the limit",
    ),
    (
        "skill-field-wrong-type",
        "a frontmatter field has the wrong YAML type",
    ),
    (
        "skill-compatibility-length",
        "`compatibility` is empty or longer than the limit",
    ),
    (
        "skill-name-mismatch",
        "`name` differs from the skill's folder (warning with `SkillOptions::lenient`)",
    ),
    (
        "skill-description-missing",
        "the frontmatter has no `description`",
    ),
    ("skill-description-empty", "`description` is empty"),
    (
        "skill-description-too-long",
        "`description` is longer than the limit (warning with `SkillOptions::lenient`)",
    ),
    // mcp.json (entry problems are warnings that skip the server)
    (
        "mcp-schema-missing",
        "mcp.json has no `$schema` (MCP disabled)",
    ),
    (
        "mcp-schema-unsupported",
        "mcp.json `$schema` is not a recognized schema (MCP disabled)",
    ),
    (
        "mcp-schema-version-mismatch",
        "mcp.json targets another Agent Plugins version than plugin.json (MCP disabled)",
    ),
    ("mcp-type-missing", "an MCP server has no `type`"),
    (
        "mcp-transport-unknown",
        "an MCP server `type` is not stdio, streamable-http or sse",
    ),
    (
        "mcp-command-invalid",
        "a stdio `command` is not one bare or `./` executable token",
    ),
    (
        "mcp-env-reserved",
        "a stdio `env` sets PLUGIN_ROOT or PLUGIN_DATA",
    ),
    (
        "mcp-cwd-invalid",
        "a stdio `cwd` is not an allowed form or escapes",
    ),
    (
        "mcp-url-invalid",
        "a remote `url` is not absolute http(s), has userinfo or a fragment, or is http to a non-loopback host",
    ),
    (
        "mcp-header-invalid",
        "a header name or value is not a valid HTTP field",
    ),
    (
        "mcp-header-duplicate",
        "two header names differ only by case",
    ),
    // marketplace.json (`version-not-semver` is an error here)
    ("entry-duplicate", "two catalog entries share a name"),
    (
        "source-kind-unknown",
        "a source `kind` is not local, github, git, npm or archive",
    ),
    (
        "source-path-invalid",
        "a source `path` is empty, absolute or has `..`",
    ),
    (
        "source-repo-invalid",
        "a github source `repo` is not owner/name",
    ),
    (
        "source-url-invalid",
        "an archive source `url` is not https, or a git source `url` is not a clone URL",
    ),
    (
        "source-npm-package-invalid",
        "an npm source `package` is neither a registry name nor a `.` path under the catalog",
    ),
    (
        "source-npm-version-invalid",
        "an npm source `version` is not an exact SemVer, or is given for a path",
    ),
    (
        "source-sha256-invalid",
        "an archive source `sha256` is not 64 hex digits",
    ),
    // Claude Code and Codex catalogs (`validate_catalog`); the codes above apply too
    (
        "catalog-key-ignored",
        "a foreign catalog has a key its format does not define (warning; it is ignored)",
    ),
    (
        "catalog-name-invalid",
        "a foreign catalog's `name` is empty or has control characters",
    ),
    (
        "catalog-path-invalid",
        "a source path or `metadata.pluginRoot` is absolute, has a scheme or `..`",
    ),
    (
        "source-sha-invalid",
        "a git source `sha` is not a full 40-hex-digit commit",
    ),
    (
        "source-npm-registry-unsupported",
        "an npm source names its own `registry`",
    ),
    (
        "policy-installation-unknown",
        "a Codex `policy.installation` is not AVAILABLE, NOT_AVAILABLE or INSTALLED_BY_DEFAULT",
    ),
    (
        "policy-authentication-unknown",
        "a Codex `policy.authentication` is not ON_INSTALL or ON_USE",
    ),
];
