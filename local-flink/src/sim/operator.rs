//! The simulated runner ([`LocalFlink`]): the runner shell's watch with a simulated job per
//! `FlinkDeployment` (`SimDeployment`), the REST server, and what tests ask of the
//! simulation (the clock, the jobs, the ledger, faults, settling).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::clock::SimClock;
use super::deployment::SimDeployment;
use super::faults::Faults;
use super::job::{JobRuntime, JobView, SimJob};
use super::ledger::{Ledger, SinkMode};
use super::rest;
use super::shared::Shared;
use super::snapshot::{Snapshot, SnapshotStore};
use crate::shell::Shell;
use crate::{DeploymentRef, Error};

/// Settings of a [`LocalFlink`].
#[derive(Clone)]
pub struct LocalFlinkOptions {
    /// The simulation clock (default: manual, at [`DEFAULT_START_MS`](crate::DEFAULT_START_MS)).
    pub clock: SimClock,
    /// How the sinks write into the ledger.
    pub sink_mode: SinkMode,
    /// Watch only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// Port of the REST server on 127.0.0.1 (`0`: any free port).
    pub rest_port: u16,
    /// Also keep snapshots as JSON files here (they survive the runner; runners given one
    /// directory restore each other's snapshots, as jobs in two clusters restore from one
    /// object store).
    pub snapshot_dir: Option<PathBuf>,
    /// The ledger the sinks write into: another runner's, to judge a job that moves between
    /// runners (clusters) as one. `None`: a ledger of its own.
    pub ledger: Option<Arc<Ledger>>,
    /// The client the jobs' gates watch their coordination ConfigMap with: in a cluster, the
    /// sidecar next to the TaskManager uses its pod's service account, so a test of RBAC
    /// passes a client acting as that service account here. `None`: the runner's own client.
    /// A deployment whose `bluegreen-sidecar` has `KUBECONFIG` in a Secret volume (a child in
    /// another cluster) uses that kubeconfig instead, as its pod would.
    pub gate_client: Option<kube::Client>,
}

impl std::fmt::Debug for LocalFlinkOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFlinkOptions")
            .field("clock", &self.clock)
            .field("sink_mode", &self.sink_mode)
            .field("namespace", &self.namespace)
            .field("rest_port", &self.rest_port)
            .field("snapshot_dir", &self.snapshot_dir)
            .field("ledger", &self.ledger.as_ref().map(|_| "shared"))
            .field(
                "gate_client",
                &self.gate_client.as_ref().map(|_| "kube::Client"),
            )
            .finish()
    }
}

impl Default for LocalFlinkOptions {
    fn default() -> Self {
        Self {
            clock: SimClock::default(),
            sink_mode: SinkMode::Transactional,
            namespace: None,
            rest_port: 0,
            snapshot_dir: None,
            ledger: None,
            gate_client: None,
        }
    }
}

/// The local FlinkDeployment runner ("local operator") and its REST server.
#[derive(Debug)]
pub struct LocalFlink {
    shared: Arc<Shared>,
    shell: Shell,
}

impl LocalFlink {
    /// Starts watching `FlinkDeployment`s through `client` and serving the REST endpoint.
    /// The FlinkDeployment CRD must be installed (see [`crd`](crate::crd)).
    pub async fn start(client: kube::Client, options: LocalFlinkOptions) -> Result<Self, Error> {
        let rt = JobRuntime {
            clock: options.clock.clone(),
            ledger: options
                .ledger
                .unwrap_or_else(|| Arc::new(Ledger::new(options.sink_mode))),
            store: Arc::new(SnapshotStore::new(options.snapshot_dir)),
            faults: Faults::new(options.clock),
            gate_client: options.gate_client.unwrap_or_else(|| client.clone()),
            client: client.clone(),
        };
        let shared = Arc::new(Shared {
            rt,
            jobs: Mutex::default(),
            deadlines: Mutex::default(),
        });
        let shell = Shell::start(
            "simulated Flink REST server",
            rest::router(Arc::clone(&shared)),
            options.rest_port,
            client,
            options.namespace,
            {
                let shared = Arc::clone(&shared);
                move |_| SimDeployment::new(Arc::clone(&shared))
            },
        )
        .await?;
        Ok(Self { shared, shell })
    }

    /// The REST URL template to configure the controller with:
    /// `http://127.0.0.1:<port>/{namespace}/{name}`.
    pub fn rest_url_template(&self) -> String {
        self.shell.rest_url_template()
    }

    /// The REST base URL of one deployment.
    pub fn rest_url(&self, d: &DeploymentRef) -> String {
        self.shell.rest_url(d)
    }

    /// The simulation clock.
    pub fn clock(&self) -> &SimClock {
        &self.shared.rt.clock
    }

    /// The ledger every sink writes to.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.shared.rt.ledger
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> &Faults {
        &self.shared.rt.faults
    }

    /// Where checkpoints and savepoints are kept.
    pub fn snapshots(&self) -> &Arc<SnapshotStore> {
        &self.shared.rt.store
    }

    /// A stored snapshot by path.
    pub fn snapshot(&self, path: &str) -> Result<Arc<Snapshot>, Error> {
        self.shared.rt.store.get(path)
    }

    /// The current job of a deployment.
    pub fn job(&self, d: &DeploymentRef) -> Option<Arc<SimJob>> {
        self.shared.jobs().get(d).and_then(|j| j.last().cloned())
    }

    /// Every job a deployment has run, oldest first.
    pub fn jobs(&self, d: &DeploymentRef) -> Vec<Arc<SimJob>> {
        self.shared.jobs().get(d).cloned().unwrap_or_default()
    }

    /// Waits (bounded, wall clock) until the current job of `d` satisfies `pred`.
    pub async fn wait_for_job(
        &self,
        d: &DeploymentRef,
        timeout: Duration,
        pred: impl Fn(&JobView) -> bool,
    ) -> Result<Arc<SimJob>, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(job) = self.job(d) {
                let mut rx = job.subscribe();
                loop {
                    if pred(&job.view()) {
                        return Ok(job);
                    }
                    let changed = tokio::time::timeout(Duration::from_millis(20), rx.changed());
                    if tokio::time::Instant::now() > deadline {
                        break;
                    }
                    match changed.await {
                        Ok(Ok(())) => {}
                        // The job may have been replaced: look it up again.
                        Ok(Err(_)) | Err(_) => break,
                    }
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("job of {d}"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits (bounded, wall clock) until the operator has made every start-up step due by the
    /// clock's current time and every job has processed everything up to it (a job stopped at
    /// a record its gate holds, waiting for a later restart, or ended counts as settled).
    pub async fn settle(&self, timeout: Duration) -> Result<(), Error> {
        let target = self.clock().now_ms();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let due = self
                .shared
                .deadlines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .any(|d| *d <= target);
            if !due {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                return Err(Error::Timeout {
                    what: format!("deployments to start by {target}"),
                    waited_ms: timeout.as_millis(),
                });
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let jobs: Vec<Arc<SimJob>> = self
            .shared
            .jobs()
            .values()
            .filter_map(|j| j.last().cloned())
            .collect();
        let wait = async {
            for job in jobs {
                let mut rx = job.subscribe();
                loop {
                    if job.settled_at(target) {
                        break;
                    }
                    if rx.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| Error::Timeout {
                what: format!("jobs to process up to {target}"),
                waited_ms: timeout.as_millis(),
            })
    }

    /// Advances a manual clock by `total_ms` in steps of `step_ms`, letting every job catch up
    /// after each step (so checkpoints, idleness and gate decisions see time pass gradually).
    pub async fn advance(
        &self,
        total_ms: i64,
        step_ms: i64,
        timeout: Duration,
    ) -> Result<(), Error> {
        let step = step_ms.max(1);
        let end = self.clock().now_ms().saturating_add(total_ms);
        while self.clock().now_ms() < end {
            let next = (self.clock().now_ms() + step).min(end);
            self.clock().set(next);
            self.settle(timeout).await?;
        }
        Ok(())
    }

    /// Stops the watch and the REST server; running jobs are cancelled (uncommitted output is
    /// discarded). Dropping the runner does the same.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for LocalFlink {
    /// Stops the watch and the REST server and cancels every job (as [`LocalFlink::shutdown`]).
    fn drop(&mut self) {
        self.shell.stop();
        let jobs: Vec<Arc<SimJob>> = self.shared.jobs().values().flatten().cloned().collect();
        for job in jobs {
            job.cancel();
        }
    }
}
