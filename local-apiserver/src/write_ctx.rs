//! What a write needs to know about its request ([`WriteCtx`]), shared by the request parsing,
//! the writes and the normalisation of objects.

use std::sync::Arc;

use super::api_error::Subject;
use super::auth::WriteGuard;
use super::fields::Scope;
use super::resources::{GroupResource, ResourceType};

/// `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// Everything a write needs to know about its request.
pub(crate) struct WriteCtx {
    pub rt: Arc<ResourceType>,
    pub version: String,
    pub namespace: String,
    /// The request targets the `/status` subresource.
    pub status: bool,
    pub manager: String,
    pub dry_run: bool,
    pub validation: FieldValidation,
    pub warnings: Vec<String>,
    /// The requester's extra checks when auth is on (`None`: none, e.g. the server's own
    /// writes).
    pub guard: Option<WriteGuard>,
}

impl WriteCtx {
    pub fn gr(&self) -> GroupResource {
        self.rt.gr()
    }

    pub fn api_version(&self) -> String {
        self.rt.api_version(&self.version)
    }

    pub fn subject<'a>(&'a self, name: &'a str) -> Subject<'a> {
        Subject {
            group: &self.rt.group,
            resource: &self.rt.plural,
            name,
        }
    }

    pub fn scope(&self) -> Scope {
        if self.status {
            Scope::Status
        } else if self.rt.has_status() {
            Scope::Main
        } else {
            Scope::All
        }
    }

    pub fn key(&self, name: &str) -> (String, String) {
        (self.namespace.clone(), name.to_string())
    }
}
