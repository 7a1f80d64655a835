//! The log of refused requests ([`Denial`]), newest last, for tests to read.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use crate::rbac::{Attributes, Target};

/// How many denials a [`DenialLog`] keeps (oldest dropped first).
const DENIALS_KEPT: usize = 10_000;

/// A request the server refused: `401` (no valid token) or `403` (not allowed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// `401` or `403`.
    pub code: u16,
    /// The user name; empty for `401`.
    pub user: String,
    /// The verb (`get`, `list`, `watch`, `create`, ... or the lower-case HTTP method of a
    /// non-resource request).
    pub verb: String,
    /// API group of a resource request (`""` for the core group).
    pub group: String,
    /// `resource` or `resource/subresource`; empty for a non-resource request.
    pub resource: String,
    /// Namespace of a namespaced request.
    pub namespace: String,
    /// Object name, if the request names one.
    pub name: String,
    /// The path of a non-resource request (empty for resource requests).
    pub path: String,
    /// The `Status` message sent back.
    pub message: String,
}

/// The denials of a server, at most [`DENIALS_KEPT`].
#[derive(Default)]
pub(super) struct DenialLog(Mutex<VecDeque<Denial>>);

impl DenialLog {
    /// Logs a request refused with `code`.
    pub fn record(&self, code: u16, user: &str, attrs: &Attributes, message: &str) {
        let (group, resource, namespace, name, path) = match &attrs.target {
            Target::Resource(r) => (
                r.group.clone(),
                r.combined(),
                r.namespace.clone(),
                r.name.clone(),
                String::new(),
            ),
            Target::NonResource { path } => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                path.clone(),
            ),
        };
        tracing::debug!(code, user, verb = %attrs.verb, group, resource, namespace, name, path, "request refused");
        let mut log = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if log.len() >= DENIALS_KEPT {
            log.pop_front();
        }
        log.push_back(Denial {
            code,
            user: user.to_owned(),
            verb: attrs.verb.clone(),
            group,
            resource,
            namespace,
            name,
            path,
            message: message.to_owned(),
        });
    }

    /// Every logged denial, oldest first.
    pub fn list(&self) -> Vec<Denial> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}
