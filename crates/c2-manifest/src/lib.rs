//! Parse and validate C2 bundle manifests (plugin.json), marketplace.json, mcp.json and SKILL.md frontmatter.
