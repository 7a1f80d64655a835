//! Optional snapshots of all objects to a directory, so a restarted server keeps its objects.
//!
//! The whole state is written to `<dir>/apiserver-state.json` (atomically: temp file and
//! rename) shortly after changes and at shutdown. Watch history is not persisted: after a
//! restart, watches from an older resourceVersion get `410 Gone` and clients re-list.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::crd::resource_type_from_crd;
use super::meta::ObjExt;
use super::resources::GroupResource;
use super::store::Store;
use crate::{Error, Result};

const FILE: &str = "apiserver-state.json";

fn file(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// Loads a snapshot into `store`, if the directory has one.
pub(crate) fn load(store: &Store, dir: &Path) -> Result<()> {
    let path = file(dir);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(Error::Persistence { path, source }),
    };
    let doc: Value = serde_json::from_slice(&text).map_err(|source| Error::CorruptSnapshot {
        path: path.clone(),
        source,
    })?;
    let mut inner = store.lock();
    let objects = doc
        .get("objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for entry in &objects {
        let (Some(group), Some(resource), Some(obj)) = (
            entry.get("group").and_then(Value::as_str),
            entry.get("resource").and_then(Value::as_str),
            entry.get("object"),
        ) else {
            continue;
        };
        if group == "apiextensions.k8s.io"
            && resource == "customresourcedefinitions"
            && let Ok(t) = resource_type_from_crd(obj)
        {
            inner.registry.insert(t);
        }
        let key = (obj.namespace().to_string(), obj.name().to_string());
        inner.restore(GroupResource::new(group, resource), key, obj.clone());
    }
    let rv = doc
        .get("resourceVersion")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    inner.restore_rv(rv);
    Ok(())
}

/// Writes a snapshot now; returns the resourceVersion it contains.
pub(crate) fn save(store: &Store, dir: &Path) -> Result<u64> {
    let (rv, objects) = {
        let inner = store.lock();
        (inner.rv, inner.snapshot())
    };
    let doc = json!({
        "resourceVersion": rv,
        "objects": objects.iter().map(|(gr, o)| json!({"group": gr.group, "resource": gr.resource, "object": **o})).collect::<Vec<_>>(),
    });
    let io = |path: PathBuf| move |source| Error::Persistence { path, source };
    std::fs::create_dir_all(dir).map_err(io(dir.to_path_buf()))?;
    let tmp = dir.join(format!("{FILE}.tmp"));
    let bytes = serde_json::to_vec_pretty(&doc).map_err(|source| Error::CorruptSnapshot {
        path: tmp.clone(),
        source,
    })?;
    std::fs::write(&tmp, bytes).map_err(io(tmp.clone()))?;
    std::fs::rename(&tmp, file(dir)).map_err(io(file(dir)))?;
    Ok(rv)
}

/// Saves whenever the resourceVersion moved, checking every `every`.
pub(crate) async fn run_saver(
    store: Arc<Store>,
    dir: PathBuf,
    every: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut saved = store.lock().rv;
    let mut tick = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        if store.lock().rv == saved {
            continue;
        }
        match save(&store, &dir) {
            Ok(rv) => saved = rv,
            Err(e) => tracing::warn!(error = %e, "cannot save local API server state"),
        }
    }
}
