//! What the LSP bridge tracks to restart a language server that crashed under an editor: the
//! crash budget, the editor's requests still unanswered, the server's requests the editor has
//! not answered, and the replay log (the editor's `initialize`, `initialized` and the open
//! documents) a new server is brought to the same state with.

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;

/// How many crashes [`LspRestartBudget::default`] restarts within its window.
pub const DEFAULT_LSP_RESTARTS: u32 = 3;
/// The window [`DEFAULT_LSP_RESTARTS`] is counted in: 3 minutes.
pub const DEFAULT_LSP_RESTART_WINDOW: Duration = Duration::from_secs(180);
/// The wait before the first restart within the window; it doubles with each further one, up
/// to [`MAX_LSP_RESTART_BACKOFF`].
pub const DEFAULT_LSP_RESTART_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before a restart.
pub const MAX_LSP_RESTART_BACKOFF: Duration = Duration::from_secs(8);
/// The most bytes of editor messages the replay log holds (the `initialize` request and the
/// open documents with their changes). Past it the session cannot be replayed, and a crash
/// ends it instead of restarting the server.
pub const MAX_REPLAY_BYTES: usize = 32 * 1024 * 1024;
/// The most unanswered request ids tracked each way; past it the session cannot be replayed.
const MAX_TRACKED_IDS: usize = 4096;
/// How long a restarted server has to answer the replayed `initialize`.
pub(super) const REPLAY_INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// The crash budget of one language server under the bridge: at most `restarts` crashes
/// within `window` are restarted (after `backoff`, doubled per earlier crash in the window,
/// at most [`MAX_LSP_RESTART_BACKOFF`]); the next one leaves the server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LspRestartBudget {
    /// Crashes restarted within the window.
    pub restarts: u32,
    /// The sliding window crashes are counted in.
    pub window: Duration,
    /// The wait before the first restart in the window.
    pub backoff: Duration,
}

impl Default for LspRestartBudget {
    fn default() -> Self {
        Self {
            restarts: DEFAULT_LSP_RESTARTS,
            window: DEFAULT_LSP_RESTART_WINDOW,
            backoff: DEFAULT_LSP_RESTART_BACKOFF,
        }
    }
}

/// The crashes seen, against a budget.
#[derive(Debug)]
pub(super) struct CrashLog {
    budget: LspRestartBudget,
    crashes: Vec<Instant>,
}

impl CrashLog {
    pub(super) fn new(budget: LspRestartBudget) -> Self {
        Self {
            budget,
            crashes: Vec::new(),
        }
    }

    /// Notes a crash at `now`: the wait before restarting, or `None` when the budget is spent.
    pub(super) fn crashed(&mut self, now: Instant) -> Option<Duration> {
        let window = self.budget.window;
        self.crashes
            .retain(|at| now.saturating_duration_since(*at) < window);
        self.crashes.push(now);
        let count = u32::try_from(self.crashes.len()).unwrap_or(u32::MAX);
        if count > self.budget.restarts {
            return None;
        }
        let doublings = count.saturating_sub(1).min(16);
        Some(
            self.budget
                .backoff
                .saturating_mul(1 << doublings)
                .min(MAX_LSP_RESTART_BACKOFF),
        )
    }

    pub(super) fn budget(&self) -> LspRestartBudget {
        self.budget
    }
}

/// The parts of a message the bridge looks at; the rest is skipped without being built.
#[derive(serde::Deserialize)]
struct Probe<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<Params<'a>>,
}

#[derive(serde::Deserialize)]
struct Params<'a> {
    #[serde(borrow, rename = "textDocument")]
    text_document: Option<Document<'a>>,
}

#[derive(serde::Deserialize)]
struct Document<'a> {
    #[serde(borrow)]
    uri: Option<std::borrow::Cow<'a, str>>,
}

fn probe(body: &[u8]) -> Option<Probe<'_>> {
    serde_json::from_slice(body).ok()
}

/// An id as its JSON text (`1`, `"a"`); `null` is no id.
fn id_key(id: Option<&RawValue>) -> Option<String> {
    id.map(RawValue::get)
        .filter(|id| *id != "null")
        .map(str::to_owned)
}

/// The session state the restart needs, updated from both directions.
#[derive(Debug, Default)]
pub(super) struct Tracker {
    /// Ids of editor requests the server has not answered.
    pub(super) pending: HashSet<String>,
    /// Ids of server requests the editor has not answered.
    pub(super) server_requests: HashSet<String>,
    /// The id of a replayed `initialize` whose answer is the bridge's, not the editor's.
    pub(super) swallow: Option<String>,
    initialize: Option<Vec<u8>>,
    initialized: Option<Vec<u8>>,
    /// The last `workspace/didChangeConfiguration`.
    configuration: Option<Vec<u8>>,
    /// The editor changed its workspace folders: not replayed, so the session cannot be.
    folders_changed: bool,
    documents: BTreeMap<String, Vec<Vec<u8>>>,
    replay_bytes: usize,
    overflowed: bool,
    lost_track: bool,
}

impl Tracker {
    /// Notes one editor message on its way to the server.
    pub(super) fn editor_said(&mut self, body: &[u8]) {
        let Some(probe) = probe(body) else { return };
        let id = id_key(probe.id);
        let Some(method) = probe.method else {
            // The editor's answer to a server request.
            if let Some(id) = id {
                self.server_requests.remove(&id);
            }
            return;
        };
        if let Some(id) = id {
            self.track(false, id);
        }
        let uri = probe
            .params
            .and_then(|params| params.text_document)
            .and_then(|document| document.uri)
            .map(std::borrow::Cow::into_owned);
        match (method.as_ref(), uri) {
            ("initialize", _) => self.keep(body, |tracker, body| tracker.initialize = Some(body)),
            ("initialized", _) => {
                self.keep(body, |tracker, body| tracker.initialized = Some(body));
            }
            ("workspace/didChangeConfiguration", _) => {
                if let Some(old) = self.configuration.take() {
                    self.replay_bytes = self.replay_bytes.saturating_sub(old.len());
                }
                self.keep(body, |tracker, body| tracker.configuration = Some(body));
            }
            ("workspace/didChangeWorkspaceFolders", _) => self.folders_changed = true,
            ("textDocument/didOpen", Some(uri)) => {
                self.forget(&uri);
                self.keep(body, |tracker, body| {
                    tracker.documents.insert(uri, vec![body]);
                });
            }
            ("textDocument/didChange", Some(uri)) if self.documents.contains_key(&uri) => {
                self.keep(body, |tracker, body| {
                    if let Some(log) = tracker.documents.get_mut(&uri) {
                        log.push(body);
                    }
                });
            }
            ("textDocument/didClose", Some(uri)) => self.forget(&uri),
            _ => {}
        }
    }

    /// Notes one server message on its way to the editor; `false` when the bridge keeps it
    /// (the answer to a replayed `initialize`).
    pub(super) fn server_said(&mut self, body: &[u8]) -> bool {
        let Some(probe) = probe(body) else {
            return true;
        };
        let Some(id) = id_key(probe.id) else {
            return true;
        };
        if probe.method.is_some() {
            self.track(true, id);
            return true;
        }
        if self.swallow.as_deref() == Some(id.as_str()) {
            self.swallow = None;
            return false;
        }
        self.pending.remove(&id);
        true
    }

    fn track(&mut self, server: bool, id: String) {
        let set = if server {
            &mut self.server_requests
        } else {
            &mut self.pending
        };
        if set.len() >= MAX_TRACKED_IDS {
            self.lost_track = true;
        } else {
            set.insert(id);
        }
    }

    fn keep(&mut self, body: &[u8], store: impl FnOnce(&mut Self, Vec<u8>)) {
        if self.overflowed {
            return;
        }
        self.replay_bytes = self.replay_bytes.saturating_add(body.len());
        if self.replay_bytes > MAX_REPLAY_BYTES {
            // Fail closed: a partial log would bring a new server to a state the editor does
            // not have.
            self.overflowed = true;
            self.documents.clear();
            self.initialize = None;
            self.initialized = None;
            self.configuration = None;
            return;
        }
        store(self, body.to_vec());
    }

    fn forget(&mut self, uri: &str) {
        if let Some(log) = self.documents.remove(uri) {
            let freed: usize = log.iter().map(Vec::len).sum();
            self.replay_bytes = self.replay_bytes.saturating_sub(freed);
        }
    }

    /// Why the session cannot be replayed into a new server, if it cannot.
    pub(super) fn unreplayable(&self) -> Option<&'static str> {
        if self.overflowed {
            return Some("the session's open documents are over the replay limit");
        }
        if self.folders_changed {
            return Some("the editor changed its workspace folders, which are not replayed");
        }
        if self.lost_track {
            return Some("too many requests were unanswered to track");
        }
        if !self.server_requests.is_empty() {
            return Some("the editor still owes the crashed server an answer");
        }
        None
    }

    /// The messages that bring a new server to the session's state, in order: `initialize`
    /// (its id noted, so its answer is kept from the editor), `initialized`, the last
    /// `workspace/didChangeConfiguration`, then each open document's `didOpen` and changes. Empty when the editor had not initialized yet.
    pub(super) fn replay(&mut self) -> (Option<Vec<u8>>, Vec<Vec<u8>>) {
        let Some(initialize) = self.initialize.clone() else {
            return (None, Vec::new());
        };
        self.swallow = probe(&initialize).and_then(|probe| id_key(probe.id));
        let mut rest: Vec<Vec<u8>> = self.initialized.iter().cloned().collect();
        rest.extend(self.configuration.iter().cloned());
        for log in self.documents.values() {
            rest.extend(log.iter().cloned());
        }
        (Some(initialize), rest)
    }

    /// Error answers for the editor's requests the crashed server will never answer (a
    /// request is never sent again: it may not be safe to repeat).
    pub(super) fn abandon(&mut self, language: &str) -> Vec<Vec<u8>> {
        let mut ids: Vec<String> = self.pending.drain().collect();
        ids.sort();
        ids.iter()
            .filter_map(|id| {
                let id: serde_json::Value = serde_json::from_str(id).ok()?;
                Some(
                    serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {
                            // LSP's RequestFailed.
                            "code": -32803,
                            "message": format!("the {language} language server crashed before answering; the request was not repeated"),
                        },
                    })
                    .to_string()
                    .into_bytes(),
                )
            })
            .collect()
    }
}
