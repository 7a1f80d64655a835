//! What the controller did, judged from the writes that passed its [`CallGate`](crate::calls):
//! every ConfigMap state it wrote (each step checked with `check_transition`), the savepoints
//! and stops it asked Flink for, the restore path of every child it applied and the history of
//! every status it wrote. A crashed controller's writes and its successor's are judged together.

use std::collections::{BTreeMap, BTreeSet};

use bluegreen_protocol::{CoordinationState, check_transition};
use serde_json::Value;

use crate::calls::{Upstream, Write};

/// One check that failed, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Finding(pub String);

/// The writes of one or more controllers, as the servers accepted them.
#[derive(Debug, Clone, Default)]
pub struct Audit {
    writes: Vec<Write>,
}

/// Path segments of a write (query stripped).
fn segments(path: &str) -> Vec<&str> {
    path.split('?')
        .next()
        .unwrap_or_default()
        .trim_matches('/')
        .split('/')
        .collect()
}

impl Audit {
    /// Judges `writes` (in any order; ConfigMap states are ordered by resourceVersion).
    pub fn new(writes: Vec<Write>) -> Self {
        Self { writes }
    }

    fn accepted(&self, upstream: Upstream) -> impl Iterator<Item = &Write> {
        self.writes
            .iter()
            .filter(move |w| w.upstream == upstream && w.accepted())
    }

    /// Every state of the ConfigMap `name` the server accepted, in resourceVersion order (a
    /// state that does not parse is kept as its error).
    pub fn configmap_states(&self, name: &str) -> Vec<(u64, Result<CoordinationState, String>)> {
        let mut states: Vec<_> = self
            .accepted(Upstream::Kubernetes)
            .filter(|w| {
                let s = segments(&w.path);
                s.contains(&"configmaps")
                    && w.method != "DELETE"
                    && w.response.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
            })
            .map(|w| {
                let data: BTreeMap<String, String> =
                    serde_json::from_value(w.response["data"].clone()).unwrap_or_default();
                (
                    w.resource_version(),
                    CoordinationState::from_data(&data).map_err(|e| e.to_string()),
                )
            })
            .collect();
        states.sort_by_key(|(rv, _)| *rv);
        states.dedup_by_key(|(rv, _)| *rv);
        states
    }

    /// Checks every step between consecutive (different) ConfigMap states with
    /// `check_transition`; returns how many states there were.
    pub fn check_configmap(&self, name: &str) -> Result<usize, Finding> {
        self.check_configmap_after(name, None).map(|(n, _)| n)
    }

    /// [`Audit::check_configmap`] for writes that follow a ConfigMap state `previous` (the last
    /// one judged before them); returns how many states there were and the last one.
    pub fn check_configmap_after(
        &self,
        name: &str,
        mut previous: Option<CoordinationState>,
    ) -> Result<(usize, Option<CoordinationState>), Finding> {
        let states = self.configmap_states(name);
        for (rv, state) in &states {
            let state = state
                .as_ref()
                .map_err(|e| Finding(format!("ConfigMap {name} at rv {rv} does not parse: {e}")))?;
            if let Some(prev) = previous.filter(|p| p != state) {
                check_transition(&prev, state).map_err(|e| {
                    Finding(format!(
                        "ConfigMap {name}: `{prev}` -> `{state}` (rv {rv}) is rejected: {e}"
                    ))
                })?;
            }
            previous = Some(*state);
        }
        Ok((states.len(), previous))
    }

    /// Flink's request ids of the accepted `POST /jobs/:jid/<verb>` (`savepoints` or `stop`),
    /// per job id.
    fn triggers(&self, verb: &str) -> BTreeMap<String, BTreeSet<String>> {
        let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for w in self
            .accepted(Upstream::FlinkRest)
            .filter(|w| w.method == "POST")
        {
            let s = segments(&w.path);
            if let [.., "jobs", job, last] = s.as_slice()
                && *last == verb
                && let Some(id) = w.response["request-id"].as_str()
            {
                out.entry((*job).to_owned())
                    .or_default()
                    .insert(id.to_owned());
            }
        }
        out
    }

    /// Distinct savepoints triggered (`POST /jobs/:jid/savepoints`), per job id.
    pub fn savepoint_triggers(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.triggers("savepoints")
    }

    /// Distinct stops-with-savepoint (`POST /jobs/:jid/stop`, by trigger id), per job id: a
    /// resent stop under the same trigger id is one stop.
    pub fn stops(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.triggers("stop")
    }

    /// How many distinct savepoints were triggered, over every job.
    pub fn savepoint_count(&self) -> usize {
        self.savepoint_triggers().values().map(BTreeSet::len).sum()
    }

    /// How many distinct stops were asked for, over every job.
    pub fn stop_count(&self) -> usize {
        self.stops().values().map(BTreeSet::len).sum()
    }

    /// Every FlinkDeployment `name` the server accepted a write of: per uid, the distinct
    /// `spec.job.initialSavepointPath`s it was written with (`None` for none).
    pub fn child_restore_paths(&self, name: &str) -> BTreeMap<String, BTreeSet<Option<String>>> {
        let mut out: BTreeMap<String, BTreeSet<Option<String>>> = BTreeMap::new();
        for w in self.accepted(Upstream::Kubernetes).filter(|w| {
            segments(&w.path).contains(&"flinkdeployments")
                && w.method != "DELETE"
                && !w.path.contains("/status")
                && w.response.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        }) {
            let uid = w.response["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let path = w.response["spec"]["job"]["initialSavepointPath"]
                .as_str()
                .map(str::to_owned);
            out.entry(uid).or_default().insert(path);
        }
        out
    }

    /// Checks the history of every status written for `name`: no epoch recorded twice.
    pub fn check_history(&self, name: &str) -> Result<usize, Finding> {
        let mut checked = 0;
        for w in self.accepted(Upstream::Kubernetes).filter(|w| {
            w.path.contains("/flinkbluegreendeployments/")
                && w.response.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        }) {
            let Some(history) = w
                .response
                .pointer("/status/history")
                .and_then(Value::as_array)
            else {
                continue;
            };
            let epochs: Vec<u64> = history.iter().filter_map(|h| h["epoch"].as_u64()).collect();
            let distinct: BTreeSet<_> = epochs.iter().collect();
            if distinct.len() != epochs.len() {
                return Err(Finding(format!(
                    "status of {name} at rv {} records an epoch twice in its history: {epochs:?}",
                    w.resource_version()
                )));
            }
            checked += 1;
        }
        Ok(checked)
    }

    /// The writes judged.
    pub fn writes(&self) -> &[Write] {
        &self.writes
    }
}
