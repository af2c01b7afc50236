//! Plans in the one vocabulary: a plan as the relay's `plugins/plan` answers it and as the
//! command line's plan file holds it, and the reader of both forms.

use super::*;

/// A plan's change: `{"action": "enable"}`, or `configure` with its `config`.
pub fn plan_action(action: &PlanAction) -> Value {
    match action {
        PlanAction::Enable => json!({ "action": "enable" }),
        PlanAction::Disable => json!({ "action": "disable" }),
        PlanAction::Inherit => json!({ "action": "inherit" }),
        PlanAction::Configure { config } => json!({ "action": "configure", "config": config }),
        _ => Value::Null,
    }
}

/// A plan (the plan file of the command line, the relay's `plugins/plan` result).
pub fn plan(file: &PlanFile, revisions: Revisions) -> Value {
    let mut object = Map::new();
    object.insert("format".to_owned(), json!(file.format));
    object.insert("id".to_owned(), json!(file.id));
    object.insert("project".to_owned(), json!(file.project));
    object.insert("change".to_owned(), plan_action(&file.change));
    if let Some(component) = &file.component {
        object.insert("component".to_owned(), json!(component));
    }
    object.insert(
        "revisions".to_owned(),
        json!({
            "graph": revisions.value(file.revisions.graph),
            "config": revisions.value(file.revisions.config),
            "project": file.revisions.project.map(|r| revisions.value(r)),
        }),
    );
    object.insert("impact".to_owned(), impact(&file.impact));
    Value::Object(object)
}

/// A plan as the text of a plan file: [`plan`]'s shape with revisions as numbers, its fields
/// in reading order (format, id, project, change, component, revisions, impact), pretty-printed.
pub fn plan_file_text(file: &PlanFile) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct PlanOut<'a> {
        format: u32,
        id: &'a str,
        project: &'a Option<PathBuf>,
        change: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        component: &'a Option<String>,
        revisions: RevisionsOut,
        impact: ImpactOut<'a>,
    }
    #[derive(Serialize)]
    struct RevisionsOut {
        graph: u64,
        config: u64,
        project: Option<u64>,
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct ImpactOut<'a> {
        starts: &'a [String],
        stops: &'a [String],
        reloads: &'a [String],
        dependents: &'a [String],
        resources: &'a [String],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        enables: &'a [String],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        disables: &'a [String],
        #[serde(skip_serializing_if = "<[String]>::is_empty")]
        user_runtimes: &'a [String],
    }
    let impact = &file.impact;
    let out = PlanOut {
        format: file.format,
        id: &file.id,
        project: &file.project,
        change: plan_action(&file.change),
        component: &file.component,
        revisions: RevisionsOut {
            graph: file.revisions.graph,
            config: file.revisions.config,
            project: file.revisions.project,
        },
        impact: ImpactOut {
            starts: &impact.starts,
            stops: &impact.stops,
            reloads: &impact.reloads,
            dependents: &impact.dependents,
            resources: &impact.resources,
            enables: &impact.enables,
            disables: &impact.disables,
            user_runtimes: &impact.user_runtimes,
        },
    };
    serde_json::to_string_pretty(&out).unwrap_or_default()
}

/// Reads a plan written by [`plan`] in either form (revisions as numbers or decimal strings).
pub fn read_plan(text: &str) -> Result<PlanFile, serde_json::Error> {
    serde_json::from_str::<PlanIn>(text).map(PlanFile::from)
}

/// Reads a plan from a JSON value, as [`read_plan`].
pub fn plan_from_value(value: Value) -> Result<PlanFile, serde_json::Error> {
    serde_json::from_value::<PlanIn>(value).map(PlanFile::from)
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PlanIn {
    format: u32,
    id: String,
    project: Option<PathBuf>,
    change: PlanAction,
    #[serde(default)]
    component: Option<String>,
    revisions: RevisionsIn,
    impact: ImpactIn,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RevisionsIn {
    graph: Revision,
    config: Revision,
    project: Option<Revision>,
}

/// A revision as a JSON number or a decimal string.
#[derive(Debug, Clone, Copy)]
struct Revision(u64);

impl<'de> Deserialize<'de> for Revision {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(u64),
            Text(String),
        }
        match Form::deserialize(deserializer)? {
            Form::Number(n) => Ok(Revision(n)),
            Form::Text(text) => text.parse().map(Revision).map_err(|_| {
                serde::de::Error::custom(format!(
                    "revision `{text}` is not a decimal 64-bit unsigned integer"
                ))
            }),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ImpactIn {
    starts: Vec<String>,
    stops: Vec<String>,
    reloads: Vec<String>,
    dependents: Vec<String>,
    resources: Vec<String>,
    #[serde(default)]
    enables: Vec<String>,
    #[serde(default)]
    disables: Vec<String>,
    #[serde(default)]
    user_runtimes: Vec<String>,
}

impl From<PlanIn> for PlanFile {
    fn from(plan: PlanIn) -> Self {
        PlanFile {
            format: plan.format,
            id: plan.id,
            project: plan.project,
            change: plan.change,
            component: plan.component,
            revisions: PlanRevisions {
                graph: plan.revisions.graph.0,
                config: plan.revisions.config.0,
                project: plan.revisions.project.map(|r| r.0),
            },
            impact: ImpactView {
                starts: plan.impact.starts,
                stops: plan.impact.stops,
                reloads: plan.impact.reloads,
                dependents: plan.impact.dependents,
                resources: plan.impact.resources,
                enables: plan.impact.enables,
                disables: plan.impact.disables,
                user_runtimes: plan.impact.user_runtimes,
            },
        }
    }
}
