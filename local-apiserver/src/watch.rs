//! Watches: newline-delimited JSON watch events, bookmarks, streaming lists and `410 Gone`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};

use super::api_error::ApiError;
use super::read::{ListQuery, Shape, render, shape_one};
use super::resources::ResourceType;
use super::store::{EventType, HistoryStart, Store, WatchRecord, encode_event};

/// A parsed watch request.
pub(crate) struct WatchRequest {
    pub rt: Arc<ResourceType>,
    pub version: String,
    pub namespace: Option<String>,
    pub query: ListQuery,
    pub send_initial_events: bool,
    pub bookmarks: bool,
    pub timeout: Duration,
    pub bookmark_interval: Duration,
    pub shape: Shape,
}

impl WatchRequest {
    fn in_scope(&self, obj: &Value) -> bool {
        use super::meta::ObjExt;
        self.namespace
            .as_deref()
            .is_none_or(|ns| obj.namespace() == ns)
            && self.query.matches(obj)
    }

    /// The event this watcher sees for a record (selector transitions turn MODIFIED into
    /// ADDED or DELETED, like the real watch cache).
    fn event_for(&self, rec: &WatchRecord) -> Option<EventType> {
        if rec.gr != self.rt.gr() {
            return None;
        }
        let now = self.in_scope(&rec.object);
        match rec.kind {
            EventType::Added | EventType::Deleted => now.then_some(rec.kind),
            EventType::Modified => {
                let before = rec.prev.as_ref().is_some_and(|p| self.in_scope(p));
                match (before, now) {
                    (true, true) => Some(EventType::Modified),
                    (false, true) => Some(EventType::Added),
                    (true, false) => Some(EventType::Deleted),
                    (false, false) => None,
                }
            }
        }
    }

    fn encode(&self, kind: EventType, rec: &WatchRecord) -> Bytes {
        if kind == rec.kind && self.shape == Shape::Full && self.version == self.rt.storage_version
        {
            rec.encoded()
        } else {
            self.encode_object(kind, &rec.object)
        }
    }

    fn encode_object(&self, kind: EventType, obj: &Value) -> Bytes {
        let shaped = match self.shape {
            Shape::Full => render(obj, &self.rt, &self.version),
            other => shape_one(obj, &self.rt, &self.version, other),
        };
        encode_event(kind.as_str(), &shaped)
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(&self.version), "metadata": meta});
        encode_event("BOOKMARK", &obj)
    }
}

fn error_event(err: &ApiError) -> Bytes {
    encode_event("ERROR", &err.to_status())
}

fn parse_rv(rv: &str) -> Result<u64, ApiError> {
    rv.parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion: \"{rv}\"")))
}

/// Starts a watch and returns the streaming response.
pub(crate) fn start(
    store: &Store,
    req: WatchRequest,
    close: watch::Receiver<u64>,
) -> Result<Response, ApiError> {
    let rv_param = req.query.resource_version.clone().unwrap_or_default();
    let from_state = rv_param.is_empty() || rv_param == "0" || req.send_initial_events;
    if req.send_initial_events && !req.bookmarks {
        return Err(ApiError::invalid_field(
            "",
            "WatchOptions",
            "",
            "allowWatchBookmarks",
            "Required value: allowWatchBookmarks must be set to true when sendInitialEvents is set",
        ));
    }
    let requested = if from_state { 0 } else { parse_rv(&rv_param)? };
    let mut initial: Vec<Bytes> = Vec::new();
    let (rx, start_rv) = {
        let inner = store.lock();
        let rx = inner.subscribe();
        if from_state {
            let ns = req.namespace.as_deref();
            for (_, obj) in inner.iter(&req.rt.gr(), ns) {
                if req.query.matches(obj) {
                    initial.push(req.encode_object(EventType::Added, obj));
                }
            }
            if req.send_initial_events {
                initial.push(req.bookmark(inner.rv, true));
            }
        } else {
            match inner.history_since(&req.rt.gr(), requested) {
                HistoryStart::TooOld { oldest } => {
                    let err = ApiError::expired(format!(
                        "too old resource version: {requested} ({oldest})"
                    ));
                    initial.push(error_event(&err));
                    return Ok(stream_response(initial, None));
                }
                HistoryStart::Events(events) => {
                    for rec in events {
                        if let Some(kind) = req.event_for(&rec) {
                            initial.push(req.encode(kind, &rec));
                        }
                    }
                }
            }
        }
        (rx, inner.rv.max(requested))
    };
    let (tx, body_rx) = mpsc::channel::<Bytes>(256);
    tokio::spawn(pump(req, initial, rx, tx, start_rv, close));
    Ok(stream_response(Vec::new(), Some(body_rx)))
}

fn stream_response(lines: Vec<Bytes>, rx: Option<mpsc::Receiver<Bytes>>) -> Response {
    let head = futures::stream::iter(lines.into_iter().map(Ok::<Bytes, Infallible>));
    let tail = futures::stream::unfold(rx, |rx| async move {
        let mut rx = rx?;
        let next = rx.recv().await?;
        Some((Ok::<Bytes, Infallible>(next), Some(rx)))
    });
    let body = Body::from_stream(futures::StreamExt::chain(head, tail));
    let mut resp = Response::new(body);
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

async fn pump(
    req: WatchRequest,
    initial: Vec<Bytes>,
    mut rx: broadcast::Receiver<Arc<WatchRecord>>,
    tx: mpsc::Sender<Bytes>,
    mut last_rv: u64,
    mut close: watch::Receiver<u64>,
) {
    for line in initial {
        if tx.send(line).await.is_err() {
            return;
        }
    }
    let deadline = tokio::time::sleep(req.timeout);
    tokio::pin!(deadline);
    let mut bookmark = tokio::time::interval(req.bookmark_interval);
    bookmark.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    bookmark.tick().await;
    close.mark_unchanged();
    loop {
        let line = tokio::select! {
            biased;
            () = tx.closed() => return,
            _ = close.changed() => return,
            () = &mut deadline => return,
            rec = rx.recv() => match rec {
                Ok(rec) => {
                    if rec.rv <= last_rv {
                        continue;
                    }
                    last_rv = rec.rv;
                    match req.event_for(&rec) {
                        Some(kind) => req.encode(kind, &rec),
                        None => continue,
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    let err = ApiError::expired(format!("too old resource version: watcher fell behind by {n} events"));
                    let _ = tx.send(error_event(&err)).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = bookmark.tick(), if req.bookmarks => req.bookmark(last_rv, false),
        };
        if tx.send(line).await.is_err() {
            return;
        }
    }
}
