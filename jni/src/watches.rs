//! The process-wide registry of ConfigMap watches: one [`SharedState`] and one watch task per
//! `(namespace, ConfigMap)`, shared by every subtask of the JVM and stopped with its last user.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bluegreen_gate::{ConfigMapSource, SharedState, StateOptions};
use tokio::runtime::Runtime;
use tokio::sync::watch;

use crate::error::Error;

/// What a watch follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WatchKey {
    /// The coordination ConfigMap `namespace/name`, watched through the Kubernetes API.
    ConfigMap {
        /// Its namespace.
        namespace: String,
        /// Its name (`<deployment>-bluegreen`).
        name: String,
    },
    /// A state fed only by [`Watches::offer`] (tests, benchmarks): no Kubernetes involved.
    Manual(String),
}

impl fmt::Display for WatchKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConfigMap { namespace, name } => write!(f, "ConfigMap {namespace}/{name}"),
            Self::Manual(name) => write!(f, "manual watch {name:?}"),
        }
    }
}

/// The raw data of the last accepted ConfigMap version and its revision (grows by one with
/// every change of the data; `0` means "none yet").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedData {
    /// The revision, starting at 1.
    pub revision: u64,
    /// The ConfigMap data, verbatim.
    pub data: Arc<BTreeMap<String, String>>,
}

/// One shared watch (one per key and process).
#[derive(Debug)]
struct Watch {
    shared: Arc<SharedState>,
    task: Option<tokio::task::AbortHandle>,
    users: usize,
}

/// One user's claim on a watch; released by [`Watches::release`]. Cheap to clone (the registry
/// keeps it by number so that Java can hold it as a `long`).
#[derive(Debug, Clone)]
pub struct WatchHandle {
    id: i64,
    key: WatchKey,
    shared: Arc<SharedState>,
    /// Set when the handle is released: wakes its pending [`Watches::await_data`] at once.
    released: watch::Sender<bool>,
}

impl WatchHandle {
    /// The number Java holds.
    pub fn id(&self) -> i64 {
        self.id
    }

    /// The state this handle reads (shared with every other handle of the same key).
    pub fn shared(&self) -> &Arc<SharedState> {
        &self.shared
    }

    /// What the handle watches.
    pub fn key(&self) -> &WatchKey {
        &self.key
    }
}

#[derive(Debug, Default)]
struct Table {
    watches: HashMap<WatchKey, Watch>,
    handles: HashMap<i64, WatchHandle>,
    next_id: i64,
}

/// The registry of a process's watches, with the runtime they run on.
#[derive(Debug, Default)]
pub struct Watches {
    runtime: OnceLock<Result<Runtime, String>>,
    table: Mutex<Table>,
}

impl Watches {
    /// An empty registry (the runtime thread starts with the first watch that needs it).
    pub fn new() -> Self {
        Self {
            runtime: OnceLock::new(),
            table: Mutex::new(Table::default()),
        }
    }

    /// The registry of this process (the one the JNI entry points use).
    pub fn global() -> &'static Self {
        static GLOBAL: OnceLock<Watches> = OnceLock::new();
        GLOBAL.get_or_init(Watches::new)
    }

    /// The runtime the watches run on: one worker thread, started on first use.
    fn runtime(&self) -> Result<&Runtime, Error> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("bluegreen-gate-watch")
                    .enable_all()
                    .build()
                    .map_err(|error| error.to_string())
            })
            .as_ref()
            .map_err(|error| Error::Runtime(error.clone()))
    }

    /// Opens a handle on the watch of ConfigMap `namespace/name`, starting the watch if no handle
    /// holds it yet, with [`client`].
    pub fn open_configmap(&self, namespace: &str, name: &str) -> Result<WatchHandle, Error> {
        let key = WatchKey::ConfigMap {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        if let Some(handle) = self.join(&key) {
            return Ok(handle);
        }
        let runtime = self.runtime()?;
        let home = std::env::var_os(HOME_KUBECONFIG).map(std::path::PathBuf::from);
        let client = runtime.block_on(client(home.as_deref()))?;
        self.open_with_client(client, namespace, name)
    }

    /// [`open_configmap`](Self::open_configmap) with a given client (tests, custom configs).
    pub fn open_with_client(
        &self,
        client: kube::Client,
        namespace: &str,
        name: &str,
    ) -> Result<WatchHandle, Error> {
        let key = WatchKey::ConfigMap {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let runtime = self.runtime()?;
        Ok(self.open_or_start(key, || {
            let shared = SharedState::new(StateOptions::default());
            let source = ConfigMapSource::new(client, namespace, name, shared.clone());
            let task = runtime.spawn(source.run());
            tracing::info!(namespace, name, "bluegreen gate: ConfigMap watch started");
            (shared, Some(task.abort_handle()))
        }))
    }

    /// Opens a handle on the manual watch `name` (created empty on first use), fed only by
    /// [`offer`](Self::offer).
    pub fn open_manual(&self, name: &str) -> WatchHandle {
        self.open_or_start(WatchKey::Manual(name.to_owned()), || {
            (SharedState::new(StateOptions::default()), None)
        })
    }

    fn join(&self, key: &WatchKey) -> Option<WatchHandle> {
        let mut table = self.lock();
        let watch = table.watches.get_mut(key)?;
        watch.users += 1;
        let shared = watch.shared.clone();
        Some(Self::new_handle(&mut table, key.clone(), shared))
    }

    fn open_or_start(
        &self,
        key: WatchKey,
        start: impl FnOnce() -> (Arc<SharedState>, Option<tokio::task::AbortHandle>),
    ) -> WatchHandle {
        let mut table = self.lock();
        let watch = table.watches.entry(key.clone()).or_insert_with(|| {
            let (shared, task) = start();
            Watch {
                shared,
                task,
                users: 0,
            }
        });
        watch.users += 1;
        let shared = watch.shared.clone();
        Self::new_handle(&mut table, key, shared)
    }

    fn new_handle(table: &mut Table, key: WatchKey, shared: Arc<SharedState>) -> WatchHandle {
        table.next_id += 1;
        let handle = WatchHandle {
            id: table.next_id,
            key,
            shared,
            released: watch::Sender::new(false),
        };
        table.handles.insert(handle.id, handle.clone());
        handle
    }

    /// The open handle numbered `id`.
    pub fn handle(&self, id: i64) -> Result<WatchHandle, Error> {
        self.lock()
            .handles
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownHandle(id))
    }

    /// Releases handle `id`: wakes its pending waits, and stops the watch when it was the last
    /// handle on it. Releasing twice is an error ([`Error::UnknownHandle`]).
    pub fn release(&self, id: i64) -> Result<(), Error> {
        let mut table = self.lock();
        let handle = table.handles.remove(&id).ok_or(Error::UnknownHandle(id))?;
        handle.released.send_replace(true);
        if let Some(watch) = table.watches.get_mut(&handle.key) {
            watch.users = watch.users.saturating_sub(1);
            if watch.users == 0 {
                if let Some(task) = &watch.task {
                    task.abort();
                    tracing::info!(watch = %handle.key, "bluegreen gate: last user gone, watch stopped");
                }
                table.watches.remove(&handle.key);
            }
        }
        Ok(())
    }

    /// How many handles hold the watch of `key` (0 when it is not running).
    pub fn users(&self, key: &WatchKey) -> usize {
        self.lock().watches.get(key).map_or(0, |watch| watch.users)
    }

    /// Feeds ConfigMap data given as a JSON object to a manual watch; returns whether the state
    /// accepted it (refusals are counted and logged by the state, like a watch's).
    pub fn offer(&self, id: i64, json: &str) -> Result<bool, Error> {
        let handle = self.handle(id)?;
        if !matches!(handle.key, WatchKey::Manual(_)) {
            return Err(Error::NotManual(handle.key.to_string()));
        }
        let data = crate::inputs::offered_data(json)?;
        Ok(handle.shared.offer_data(&data).is_ok())
    }

    /// The last accepted data of handle `id` once its revision differs from `since` (at once if
    /// it already does; `since = 0` for "any"), or `None` after `timeout` or when the handle is
    /// released meanwhile. Blocks the calling thread, which must not be a runtime thread.
    pub fn await_data(
        &self,
        id: i64,
        since: u64,
        timeout: Duration,
    ) -> Result<Option<AcceptedData>, Error> {
        let handle = self.handle(id)?;
        let mut data = handle.shared.accepted_data();
        let mut released = handle.released.subscribe();
        let fresh = |slot: &Option<(u64, Arc<BTreeMap<String, String>>)>| {
            slot.as_ref()
                .is_some_and(|(revision, _)| *revision != since)
        };
        let wait = async {
            tokio::select! {
                seen = data.wait_for(fresh) => seen.ok().and_then(|slot| {
                    slot.as_ref().map(|(revision, data)| AcceptedData {
                        revision: *revision,
                        data: Arc::clone(data),
                    })
                }),
                _ = released.wait_for(|released| *released) => None,
                () = tokio::time::sleep(timeout) => None,
            }
        };
        Ok(self.runtime()?.block_on(wait))
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every critical section leaves the table consistent, so a poisoned lock is usable.
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The JSON form of accepted data, the same body as the sidecar's `GET /v1/state`
/// (`{"revision": "3", "epoch": "7", "configmap": {...}}`), so that Java parses both alike.
pub fn state_json(accepted: &AcceptedData) -> String {
    serde_json::json!({
        "revision": accepted.revision.to_string(),
        "epoch": accepted.data.get("epoch").cloned().unwrap_or_default(),
        "configmap": &*accepted.data,
    })
    .to_string()
}

/// The environment variable naming the kubeconfig for the home API server of a job in another
/// cluster (set by the controller on the main container when no sidecar is injected).
pub const HOME_KUBECONFIG: &str = bluegreen_protocol::wire::env::HOME_KUBECONFIG;

/// The client the gates watch their ConfigMap with: from the kubeconfig `home` (the
/// [`HOME_KUBECONFIG`] file of a job in another cluster; its relative `tokenFile` is resolved
/// against its directory and re-read, so a rotated token is used) or else
/// `kube::Client::try_default()` (in-cluster, or the kubeconfig).
pub async fn client(home: Option<&std::path::Path>) -> Result<kube::Client, Error> {
    let Some(path) = home else {
        return Ok(kube::Client::try_default().await?);
    };
    let home_error = |message: String| Error::HomeKubeconfig {
        path: path.display().to_string(),
        message,
    };
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|e| home_error(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| home_error(e.to_string()))?;
    Ok(kube::Client::try_from(config)?)
}
