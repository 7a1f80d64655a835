//! Fault injection for tests, through a typed handle.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::api_error::ApiError;
use super::store::Store;

/// A Kubernetes API verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH (any patch type, including server-side apply).
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
}

/// Which requests a fault applies to; unset fields match anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMatch {
    /// The verb.
    pub verb: Option<Verb>,
    /// Plural resource name, e.g. `configmaps` or `flinkdeployments`.
    pub resource: Option<String>,
    /// Namespace.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource, e.g. `status`.
    pub subresource: Option<String>,
}

impl RequestMatch {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Matches requests with this verb.
    pub fn verb(verb: Verb) -> Self {
        Self {
            verb: Some(verb),
            ..Self::default()
        }
    }

    /// Restricts to a plural resource name.
    #[must_use]
    pub fn resource(mut self, resource: &str) -> Self {
        self.resource = Some(resource.to_string());
        self
    }

    /// Restricts to a namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Restricts to an object name.
    #[must_use]
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Restricts to a subresource (`status`).
    #[must_use]
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.to_string());
        self
    }

    fn matches(&self, r: &RequestInfo) -> bool {
        let eq = |want: &Option<String>, got: &str| want.as_deref().is_none_or(|w| w == got);
        self.verb.is_none_or(|v| v == r.verb)
            && eq(&self.resource, &r.resource)
            && eq(&self.namespace, &r.namespace)
            && eq(&self.name, &r.name)
            && eq(&self.subresource, &r.subresource)
    }
}

/// What the server knows about a resource request when faults are checked.
#[derive(Debug, Clone)]
pub(crate) struct RequestInfo {
    pub verb: Verb,
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub subresource: String,
}

#[derive(Debug)]
enum Action {
    Delay(Duration),
    Fail { code: u16, remaining: u32 },
}

#[derive(Debug)]
struct Rule {
    when: RequestMatch,
    action: Action,
}

pub(crate) struct FaultState {
    rules: Mutex<Vec<Rule>>,
    paused: watch::Sender<bool>,
    close_watches: watch::Sender<u64>,
}

impl FaultState {
    pub fn new() -> Self {
        Self {
            rules: Mutex::new(Vec::new()),
            paused: watch::channel(false).0,
            close_watches: watch::channel(0).0,
        }
    }

    /// A receiver that changes whenever open watches must be closed.
    pub fn close_signal(&self) -> watch::Receiver<u64> {
        self.close_watches.subscribe()
    }

    /// Ends all open watch streams.
    pub fn close_all_watches(&self) {
        self.close_watches.send_modify(|n| *n += 1);
    }

    /// Waits while the server is paused.
    pub async fn wait_unpaused(&self) {
        let mut paused = self.paused.subscribe();
        // `wait_for` only errors when the sender is gone, and `self` owns it.
        let _ = paused.wait_for(|p| !*p).await;
    }

    /// Applies delays and failures that match the request.
    pub async fn before(&self, info: &RequestInfo) -> Result<(), ApiError> {
        let (delay, fail) = {
            let mut rules = self
                .rules
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let delay: Duration = rules
                .iter()
                .filter(|r| r.when.matches(info))
                .filter_map(|r| match r.action {
                    Action::Delay(d) => Some(d),
                    Action::Fail { .. } => None,
                })
                .sum();
            let mut fail = None;
            for r in rules.iter_mut().filter(|r| r.when.matches(info)) {
                if let Action::Fail { code, remaining } = &mut r.action
                    && *remaining > 0
                {
                    *remaining -= 1;
                    fail = Some(*code);
                    break;
                }
            }
            rules.retain(|r| !matches!(r.action, Action::Fail { remaining: 0, .. }));
            (delay, fail)
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        match fail {
            Some(code) => Err(injected(code, info)),
            None => Ok(()),
        }
    }
}

fn injected(code: u16, info: &RequestInfo) -> ApiError {
    let reason = match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    };
    ApiError::new(
        code,
        reason,
        format!(
            "injected fault: {:?} {} {}/{}",
            info.verb, info.resource, info.namespace, info.name
        ),
    )
}

/// Typed handle to inject faults into a running [`super::LocalApiServer`].
///
/// Note that `kube::Client` built from a plain `kube::Config` retries 429, 503 and 504
/// responses by itself (up to 15 times); inject 409 or 500 to surface an error to the caller.
#[derive(Clone)]
pub struct FaultInjector {
    pub(crate) state: Arc<FaultState>,
    pub(crate) store: Arc<Store>,
}

impl FaultInjector {
    /// Delays every matching request by `delay` (until [`FaultInjector::clear`]).
    pub fn delay(&self, when: RequestMatch, delay: Duration) {
        self.push(Rule {
            when,
            action: Action::Delay(delay),
        });
    }

    /// Fails the next `count` matching requests with HTTP `code` and a `Status` body.
    pub fn fail_next(&self, when: RequestMatch, count: u32, code: u16) {
        if count > 0 {
            self.push(Rule {
                when,
                action: Action::Fail {
                    code,
                    remaining: count,
                },
            });
        }
    }

    /// Removes all delay and failure rules (does not resume a paused server).
    pub fn clear(&self) {
        self.state
            .rules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }

    /// Ends every open watch stream (clients see the response end and reconnect).
    pub fn close_watches(&self) {
        self.state.close_all_watches();
    }

    /// Forgets the watch history: a watch from any resourceVersion older than now gets
    /// `410 Gone` (an ERROR event with reason `Expired`), as after an etcd compaction.
    pub fn compact_history(&self) {
        self.store.lock().compact();
    }

    /// Makes new requests hang (before they are processed) until [`FaultInjector::resume`].
    pub fn pause(&self) {
        self.state.paused.send_replace(true);
    }

    /// Lets paused requests continue.
    pub fn resume(&self) {
        self.state.paused.send_replace(false);
    }

    fn push(&self, rule: Rule) {
        self.state
            .rules
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(rule);
    }
}
