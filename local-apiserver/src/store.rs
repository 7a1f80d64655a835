//! The object store: objects keyed by kind, namespace and name, a global monotonic
//! resourceVersion, a bounded event history for watches and a broadcast of new events.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use axum::body::Bytes;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::event_views::{View, convert};
use super::meta::set_meta;
use super::resources::{GroupResource, RBAC as RBAC_GROUP, Registry};

/// `(namespace, name)`; the namespace is empty for cluster-scoped objects.
pub(crate) type ObjKey = (String, String);

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One committed change, kept in the history and broadcast to watchers.
#[derive(Debug)]
pub(crate) struct WatchRecord {
    pub rv: u64,
    pub gr: GroupResource,
    pub kind: EventType,
    pub object: Arc<Value>,
    /// The object before this change (for MODIFIED and DELETED), used for selector transitions.
    pub prev: Option<Arc<Value>>,
    encoded: OnceLock<Bytes>,
}

impl WatchRecord {
    /// The event as a watch-stream line, serialized once and shared by all watchers that
    /// want it in the storage version.
    pub fn encoded(&self) -> Bytes {
        self.encoded
            .get_or_init(|| encode_event(self.kind.as_str(), &self.object))
            .clone()
    }
}

/// Encodes `{"type":..,"object":..}\n`.
pub(crate) fn encode_event(kind: &str, object: &Value) -> Bytes {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(kind.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    if serde_json::to_writer(&mut buf, object).is_err() {
        buf.extend_from_slice(b"null");
    }
    buf.extend_from_slice(b"}\n");
    Bytes::from(buf)
}

/// Mutable server state, guarded by one mutex (operations are short and never await).
pub(crate) struct Inner {
    pub rv: u64,
    pub registry: Registry,
    /// Changes whenever a Role, ClusterRole, RoleBinding or ClusterRoleBinding does (the
    /// authorizer's cache key).
    pub rbac_generation: u64,
    pub objects: HashMap<GroupResource, BTreeMap<ObjKey, Arc<Value>>>,
    history: VecDeque<Arc<WatchRecord>>,
    /// Every event with `rv > history_floor` is in `history`.
    history_floor: u64,
    history_limit: usize,
    tx: broadcast::Sender<Arc<WatchRecord>>,
}

/// Where a watch starting at some resourceVersion begins.
pub(crate) enum HistoryStart {
    /// Events after the requested version, oldest first.
    Events(Vec<Arc<WatchRecord>>),
    /// The version is older than the retained history.
    TooOld { oldest: u64 },
}

impl Inner {
    /// Stores `obj` (or removes it when `kind` is `Deleted`) with a new resourceVersion and
    /// publishes the event. Returns the stored object. A change of an Event is also made in the
    /// other Event API's view ([`Inner::mirror`]).
    pub fn commit(
        &mut self,
        gr: &GroupResource,
        key: ObjKey,
        obj: Value,
        kind: EventType,
    ) -> Arc<Value> {
        let stored = self.commit_one(gr, key.clone(), obj, kind);
        self.mirror(gr, key, kind, &stored);
        stored
    }

    /// After a change of an Event in one view (already committed), writes the same change to the
    /// other view. Does nothing for other kinds.
    fn mirror(&mut self, gr: &GroupResource, key: ObjKey, kind: EventType, stored: &Value) {
        let Some(view) = View::of(gr) else {
            return;
        };
        let other = view.other().gr();
        let existing = self.get(&other, &key.0, &key.1);
        if kind == EventType::Deleted {
            if let Some(existing) = existing {
                self.commit_one(&other, key, (*existing).clone(), EventType::Deleted);
            }
            return;
        }
        let mut converted = match convert(view, stored) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(error = %e, name = %key.1, "event not mirrored to the other Event API");
                return;
            }
        };
        let kind = match existing {
            Some(existing) => {
                let rv = existing.pointer("/metadata/resourceVersion").cloned();
                set_meta(&mut converted, "resourceVersion", rv);
                if converted == *existing {
                    return;
                }
                EventType::Modified
            }
            None => EventType::Added,
        };
        self.commit_one(&other, key, converted, kind);
    }

    /// [`Inner::commit`] of this one object only.
    pub fn commit_one(
        &mut self,
        gr: &GroupResource,
        key: ObjKey,
        mut obj: Value,
        kind: EventType,
    ) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        if gr.group == RBAC_GROUP {
            self.rbac_generation += 1;
        }
        set_meta(&mut obj, "resourceVersion", Some(json!(rv.to_string())));
        let obj = Arc::new(obj);
        let map = self.objects.entry(gr.clone()).or_default();
        let prev = if kind == EventType::Deleted {
            map.remove(&key)
        } else {
            map.insert(key, Arc::clone(&obj))
        };
        let rec = Arc::new(WatchRecord {
            rv,
            gr: gr.clone(),
            kind,
            object: Arc::clone(&obj),
            prev,
            encoded: OnceLock::new(),
        });
        self.history.push_back(Arc::clone(&rec));
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.history_floor = old.rv;
            }
        }
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(rec);
        obj
    }

    pub fn get(&self, gr: &GroupResource, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(gr)
            .and_then(|m| m.get(&(ns.to_string(), name.to_string())))
            .cloned()
    }

    /// Objects of a kind, in key order, optionally restricted to one namespace.
    pub fn iter<'a>(
        &'a self,
        gr: &GroupResource,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a ObjKey, &'a Arc<Value>)> + 'a {
        self.objects
            .get(gr)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(move |(k, _)| ns.is_none_or(|n| k.0 == n))
    }

    /// Events of kind `gr` after `rv`, or `TooOld` when history no longer reaches back that far.
    pub fn history_since(&self, gr: &GroupResource, rv: u64) -> HistoryStart {
        if rv < self.history_floor {
            return HistoryStart::TooOld {
                oldest: self.history_floor + 1,
            };
        }
        HistoryStart::Events(
            self.history
                .iter()
                .filter(|r| r.rv > rv && r.gr == *gr)
                .cloned()
                .collect(),
        )
    }

    /// Whether a list continuation or exact read at `rv` can still be served from history.
    pub fn is_compacted(&self, rv: u64) -> bool {
        rv < self.history_floor
    }

    /// Drops the whole watch history: watches from any older resourceVersion get `410 Gone`.
    pub fn compact(&mut self) {
        self.history.clear();
        self.history_floor = self.rv;
    }

    /// Subscribes to future events; call while holding the lock to get a gap-free stream.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchRecord>> {
        self.tx.subscribe()
    }

    /// All objects (for persistence).
    pub fn snapshot(&self) -> Vec<(GroupResource, Arc<Value>)> {
        self.objects
            .iter()
            .flat_map(|(gr, m)| m.values().map(move |o| (gr.clone(), Arc::clone(o))))
            .collect()
    }

    /// Inserts an object as-is, without an event (persistence restore).
    pub fn restore(&mut self, gr: GroupResource, key: ObjKey, obj: Value) {
        if gr.group == RBAC_GROUP {
            self.rbac_generation += 1;
        }
        self.objects
            .entry(gr)
            .or_default()
            .insert(key, Arc::new(obj));
    }

    /// Sets the resourceVersion counter and history floor after a restore.
    pub fn restore_rv(&mut self, rv: u64) {
        self.rv = self.rv.max(rv);
        self.history_floor = self.rv;
    }
}

/// Shared handle to the state.
pub(crate) struct Store {
    inner: Mutex<Inner>,
}

impl Store {
    pub fn new(history_limit: usize, watch_buffer: usize) -> Self {
        let (tx, _) = broadcast::channel(watch_buffer.max(16));
        Self {
            inner: Mutex::new(Inner {
                rv: 0,
                registry: Registry::builtin(),
                rbac_generation: 0,
                objects: HashMap::new(),
                history: VecDeque::new(),
                history_floor: 0,
                history_limit: history_limit.max(1),
                tx,
            }),
        }
    }

    /// Locks the state. A panic while holding the lock cannot leave a half-written object
    /// (all mutations are a single `commit`), so a poisoned lock is recovered.
    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
