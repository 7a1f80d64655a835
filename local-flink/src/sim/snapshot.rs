//! Checkpoints and savepoints of simulated jobs, addressed by path like Flink's.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::source::SourceSpec;
use crate::Error;

/// The root of every snapshot path.
pub const PATH_PREFIX: &str = "file:///bluegreen-local/";

/// Checkpoint or savepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SnapshotKind {
    /// A periodic checkpoint.
    Checkpoint,
    /// A savepoint (triggered, or taken by stop-with-savepoint).
    Savepoint,
}

/// Everything a job needs to resume exactly where the snapshot was taken.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Checkpoint id within its job (savepoints share the counter, as in Flink).
    pub id: u64,
    /// Where it is stored (`file:///bluegreen-local/...`).
    pub path: String,
    /// Checkpoint or savepoint.
    pub kind: SnapshotKind,
    /// The job that took it.
    pub job_id: String,
    /// Simulation time it was taken at.
    pub taken_at_ms: i64,
    /// The topic read.
    pub source: SourceSpec,
    /// Next offset to read, per split.
    pub positions: Vec<u64>,
    /// The keyed running counts.
    pub counts: BTreeMap<u64, u64>,
    /// The maximum event time any gate of the job passed (union state: every restored gate
    /// starts from it).
    pub gate_max_passed: Option<i64>,
}

/// Holds snapshots in memory and, optionally, as JSON files under a directory.
#[derive(Debug, Default)]
pub struct SnapshotStore {
    map: Mutex<HashMap<String, Arc<Snapshot>>>,
    dir: Option<PathBuf>,
    seq: AtomicU64,
}

impl SnapshotStore {
    /// An in-memory store; with `dir`, snapshots are also written there and read back from
    /// there when not in memory (so they survive a restart of the runner).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self {
            map: Mutex::default(),
            dir,
            seq: AtomicU64::new(1),
        }
    }

    /// A fresh path for a snapshot of `job_id`.
    pub fn new_path(&self, kind: SnapshotKind, job_id: &str, id: u64) -> String {
        match kind {
            SnapshotKind::Checkpoint => format!("{PATH_PREFIX}checkpoints/{job_id}/chk-{id}"),
            SnapshotKind::Savepoint => {
                let seq = self.seq.fetch_add(1, Ordering::Relaxed);
                let short = job_id.get(..6).unwrap_or(job_id);
                format!("{PATH_PREFIX}savepoints/savepoint-{short}-{seq:06}")
            }
        }
    }

    fn file(&self, path: &str) -> Option<PathBuf> {
        let rel = path.strip_prefix(PATH_PREFIX)?;
        Some(self.dir.as_ref()?.join(format!("{rel}.json")))
    }

    /// Stores a snapshot under its path.
    pub fn put(&self, snapshot: Snapshot) -> Result<Arc<Snapshot>, Error> {
        let snapshot = Arc::new(snapshot);
        if let Some(file) = self.file(&snapshot.path) {
            let io = |e: &dyn std::fmt::Display| Error::SnapshotIo {
                path: file.display().to_string(),
                reason: e.to_string(),
            };
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| io(&e))?;
            }
            let json = serde_json::to_vec_pretty(&*snapshot).map_err(|e| io(&e))?;
            std::fs::write(&file, json).map_err(|e| io(&e))?;
        }
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(snapshot.path.clone(), Arc::clone(&snapshot));
        Ok(snapshot)
    }

    /// The snapshot stored at `path`.
    pub fn get(&self, path: &str) -> Result<Arc<Snapshot>, Error> {
        let path = path.trim_end_matches('/');
        if let Some(s) = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
        {
            return Ok(Arc::clone(s));
        }
        let not_found = || Error::SnapshotNotFound {
            path: path.to_owned(),
        };
        let file = self.file(path).ok_or_else(not_found)?;
        let bytes = std::fs::read(&file).map_err(|_| not_found())?;
        let snapshot: Snapshot = serde_json::from_slice(&bytes).map_err(|e| Error::SnapshotIo {
            path: file.display().to_string(),
            reason: e.to_string(),
        })?;
        let snapshot = Arc::new(snapshot);
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_owned(), Arc::clone(&snapshot));
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(path: String) -> Snapshot {
        Snapshot {
            id: 3,
            path,
            kind: SnapshotKind::Savepoint,
            job_id: "abcdef0123".into(),
            taken_at_ms: 5,
            source: SourceSpec::default(),
            positions: vec![1, 2, 3, 4],
            counts: BTreeMap::from([(1, 2)]),
            gate_max_passed: Some(7),
        }
    }

    #[test]
    fn snapshots_survive_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SnapshotStore::new(Some(dir.path().to_owned()));
        let path = store.new_path(SnapshotKind::Savepoint, "abcdef0123", 3);
        assert!(path.starts_with("file:///bluegreen-local/savepoints/savepoint-abcdef-"));
        store.put(snapshot(path.clone())).expect("put");
        let fresh = SnapshotStore::new(Some(dir.path().to_owned()));
        assert_eq!(
            *fresh.get(&path).expect("read back"),
            snapshot(path.clone())
        );
        assert!(matches!(
            SnapshotStore::new(None).get(&path),
            Err(Error::SnapshotNotFound { .. })
        ));
    }
}
