//! Feeds a [`SharedState`] from a watch of the coordination ConfigMap.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use crate::error::Error;
use crate::shared::SharedState;

/// How a [`ConfigMapSource`] confirms that its view is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceOptions {
    /// When no update has been accepted for this long, the source re-reads the ConfigMap with one
    /// `get` (a quiet watch delivers nothing, so it cannot confirm freshness by itself). Keep it
    /// well below [`StateOptions::max_staleness`](crate::StateOptions::max_staleness).
    pub probe_interval: Duration,
}

impl Default for SourceOptions {
    /// `probe_interval`: 10 s.
    fn default() -> Self {
        Self {
            probe_interval: Duration::from_secs(10),
        }
    }
}

/// Watches one coordination ConfigMap (`kube::runtime::watcher`, field selector
/// `metadata.name=<name>`) and offers every version of it to a [`SharedState`].
///
/// - A version that does not parse or is not reachable from the current state by legal steps is
///   refused (counted by kind, logged); the last good state stays.
/// - Watch drops and `410 Gone` are recovered by the watcher (resume, or re-list); re-lists are
///   counted as watch restarts.
/// - A deleted (or, at a re-list, absent) ConfigMap keeps the last good state; counted and
///   logged. Only the controller deletes it, with the whole deployment.
/// - When no update was accepted for [`SourceOptions::probe_interval`], one `get` re-reads it;
///   an accepted read confirms freshness. [`SharedState::check_staleness`] runs on a timer.
///
/// Needs only `get`, `list` and `watch` on that one ConfigMap.
#[derive(Debug)]
pub struct ConfigMapSource {
    api: Api<ConfigMap>,
    namespace: String,
    name: String,
    shared: Arc<SharedState>,
    options: SourceOptions,
}

impl ConfigMapSource {
    /// A source for ConfigMap `namespace/name` (see
    /// [`configmap_name`](bluegreen_protocol::configmap_name)) feeding `shared`.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        shared: Arc<SharedState>,
    ) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            shared,
            options: SourceOptions::default(),
        }
    }

    /// Replaces the options.
    #[must_use]
    pub fn with_options(mut self, options: SourceOptions) -> Self {
        self.options = options;
        self
    }

    /// The state this source feeds.
    pub fn shared(&self) -> &Arc<SharedState> {
        &self.shared
    }

    /// Runs the source on the current Tokio runtime until the returned handle is aborted.
    pub fn spawn(self) -> tokio::task::JoinHandle<Result<(), Error>> {
        tokio::spawn(self.run())
    }

    /// Watches until the watch ends, which `kube::runtime::watcher` never does on its own: in
    /// practice this runs until it is dropped or aborted.
    pub async fn run(self) -> Result<(), Error> {
        let selector = format!("metadata.name={}", self.name);
        let mut events = watcher::watcher(
            self.api.clone(),
            watcher::Config::default().fields(&selector),
        )
        .default_backoff()
        .boxed();
        let mut handler = EventHandler::new(Arc::clone(&self.shared), self.name.clone());
        let mut tick = tokio::time::interval(self.check_period());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_probe: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(event) => handler.handle(event),
                    None => {
                        return Err(Error::WatchEnded {
                            namespace: self.namespace,
                            name: self.name,
                        });
                    }
                },
                _ = tick.tick() => {
                    let probe_due = last_probe.is_none_or(|at| at.elapsed() >= self.options.probe_interval);
                    if probe_due && self.shared.staleness() >= self.options.probe_interval {
                        last_probe = Some(tokio::time::Instant::now());
                        self.shared.stats.probes.fetch_add(1, Ordering::Relaxed);
                        // Bounded, so that an unreachable API server cannot stall the
                        // staleness check below.
                        let probe = tokio::time::timeout(
                            self.options.probe_interval,
                            self.api.get_opt(&self.name),
                        )
                        .await;
                        if let Ok(result) = probe {
                            handler.handle_probe(result);
                        } else {
                            tracing::warn!(configmap = %self.name, "coordination ConfigMap probe timed out");
                        }
                    }
                    self.shared.check_staleness();
                }
            }
        }
    }

    /// How often staleness is checked: often enough to notice within a quarter of the bound.
    fn check_period(&self) -> Duration {
        let mut period = self.options.probe_interval.min(Duration::from_secs(1));
        if let Some(bound) = self.shared.options().max_staleness {
            period = period.min(bound / 4);
        }
        period.max(Duration::from_millis(10))
    }
}

/// Turns watch events (and probe results) into offers. Separate from the I/O so that every event
/// order can be unit-tested.
#[derive(Debug)]
pub(crate) struct EventHandler {
    shared: Arc<SharedState>,
    name: String,
    lists: u64,
    listed_object: bool,
    /// Whether the ConfigMap was there when last seen (`None` before the first sighting), so
    /// that a deletion is counted and logged once, not at every probe.
    present: Option<bool>,
    /// The highest numeric `resourceVersion` read so far (watch or probe).
    last_resource_version: Option<u64>,
}

impl EventHandler {
    pub fn new(shared: Arc<SharedState>, name: String) -> Self {
        Self {
            shared,
            name,
            lists: 0,
            listed_object: false,
            present: None,
            last_resource_version: None,
        }
    }

    pub fn handle(&mut self, event: Result<Event<ConfigMap>, watcher::Error>) {
        match event {
            Ok(Event::Init) => {
                if self.lists > 0 {
                    self.shared
                        .stats
                        .watch_restarts
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::info!(configmap = %self.name, "re-listing the coordination ConfigMap");
                }
                self.lists += 1;
                self.listed_object = false;
            }
            Ok(Event::InitApply(configmap)) => {
                self.listed_object = true;
                self.apply(&configmap);
            }
            Ok(Event::Apply(configmap)) => self.apply(&configmap),
            Ok(Event::InitDone) => {
                if !self.listed_object {
                    self.deleted("absent when listed");
                }
            }
            Ok(Event::Delete(_)) => self.deleted("deleted"),
            Err(error) => {
                self.shared
                    .stats
                    .watch_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(configmap = %self.name, %error, "coordination ConfigMap watch error; the watcher recovers");
            }
        }
    }

    pub fn handle_probe(&mut self, result: Result<Option<ConfigMap>, kube::Error>) {
        match result {
            Ok(Some(configmap)) => self.apply(&configmap),
            Ok(None) => self.deleted("absent when probed"),
            Err(error) => {
                tracing::warn!(configmap = %self.name, %error, "coordination ConfigMap probe failed");
            }
        }
    }

    fn apply(&mut self, configmap: &ConfigMap) {
        if configmap.metadata.name.as_deref() != Some(self.name.as_str()) {
            // The field selector should make this impossible; never apply another object.
            tracing::warn!(configmap = %self.name, other = ?configmap.metadata.name, "ignoring an event for another ConfigMap");
            return;
        }
        self.present = Some(true);
        let version = configmap
            .metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok());
        if let (Some(version), Some(last)) = (version, self.last_resource_version)
            && version < last
        {
            self.shared.stats.superseded.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(configmap = %self.name, version, last, "skipping an older version already superseded");
            return;
        }
        if version.is_some() {
            self.last_resource_version = version;
        }
        let empty = std::collections::BTreeMap::new();
        // Refusals are counted and logged by the shared state.
        let _ = self
            .shared
            .offer_data(configmap.data.as_ref().unwrap_or(&empty));
    }

    fn deleted(&mut self, how: &str) {
        if self.present == Some(false) {
            return;
        }
        self.present = Some(false);
        self.shared.stats.deletions.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            configmap = %self.name,
            how,
            state = ?self.shared.current().map(|s| s.to_string()),
            "coordination ConfigMap is gone; keeping the last good state"
        );
    }
}
