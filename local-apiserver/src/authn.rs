//! Authentication: bearer tokens mapped to users and service accounts.
//!
//! Tokens are opaque random strings kept in memory (a restarted server issues new ones). A
//! service account's token is bound to that ServiceAccount object, as Kubernetes' TokenRequest
//! tokens are: it stops working when the ServiceAccount is deleted (or recreated) or when it
//! expires.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use super::meta::{ObjExt, random_u64};
use super::resources::GroupResource;
use super::store::Inner;

/// The group of every authenticated user.
pub const AUTHENTICATED: &str = "system:authenticated";
/// The group whose members may do anything (checked before RBAC, as in Kubernetes).
pub const MASTERS: &str = "system:masters";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Who a request comes from (Kubernetes' `user.Info`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// User name, e.g. `system:serviceaccount:flink-jobs:flink`.
    pub name: String,
    /// Groups, `system:authenticated` included.
    pub groups: Vec<String>,
}

impl UserInfo {
    /// A user named `name` in `groups` and `system:authenticated`.
    pub fn user(name: &str, groups: &[&str]) -> Self {
        let mut all: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        if !all.iter().any(|g| g == AUTHENTICATED) {
            all.push(AUTHENTICATED.to_owned());
        }
        Self {
            name: name.to_owned(),
            groups: all,
        }
    }

    /// Service account `namespace/name`: user `system:serviceaccount:<namespace>:<name>` in
    /// groups `system:serviceaccounts`, `system:serviceaccounts:<namespace>` and
    /// `system:authenticated`.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self {
            name: Self::service_account_name(namespace, name),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                AUTHENTICATED.to_owned(),
            ],
        }
    }

    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn service_account_name(namespace: &str, name: &str) -> String {
        format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
    }

    /// Whether the user is a member of `system:masters`.
    pub fn is_superuser(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// A bearer token. It is never printed: `Debug` shows `Token(<redacted>)` and there is no
/// `Display`; [`Token::expose`] gives the string to put into a kubeconfig or a header.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Token(String);

impl Token {
    /// A new random token: `bglt_` and 64 hex digits (256 bits from the standard library's
    /// randomly keyed SipHash; good for a local server, not a production credential store).
    fn generate() -> Self {
        let mut s = String::from("bglt_");
        for _ in 0..4 {
            let _ = write!(s, "{:016x}", random_u64());
        }
        Self(s)
    }

    /// The token itself.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

/// The ServiceAccount object a token is bound to.
#[derive(Debug, Clone)]
struct Binding {
    namespace: String,
    name: String,
    uid: String,
}

#[derive(Debug, Clone)]
struct Entry {
    user: UserInfo,
    bound: Option<Binding>,
    expires: Option<SystemTime>,
}

/// Why a token was refused (logged, never with the token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The server never issued it.
    Unknown,
    /// Past its expiry.
    Expired,
    /// Its ServiceAccount is gone (or was recreated).
    ServiceAccountGone,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown token",
            Self::Expired => "token expired",
            Self::ServiceAccountGone => "the token's service account no longer exists",
        }
    }
}

/// The tokens a server has issued.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    entries: Mutex<HashMap<Token, Entry>>,
}

impl Tokens {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Token, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A token for `user` that never expires.
    pub fn issue_user(&self, user: UserInfo) -> Token {
        let token = Token::generate();
        self.lock().insert(
            token.clone(),
            Entry {
                user,
                bound: None,
                expires: None,
            },
        );
        token
    }

    /// A token for the ServiceAccount `serviceaccount` (a stored object), valid for `ttl`.
    pub fn issue_service_account(
        &self,
        serviceaccount: &serde_json::Value,
        ttl: Duration,
    ) -> Token {
        let (namespace, name) = (serviceaccount.namespace(), serviceaccount.name());
        let token = Token::generate();
        self.lock().insert(
            token.clone(),
            Entry {
                user: UserInfo::service_account(namespace, name),
                bound: Some(Binding {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    uid: serviceaccount.uid().to_owned(),
                }),
                expires: SystemTime::now().checked_add(ttl),
            },
        );
        token
    }

    /// The user of `token`, checked against the store for bound tokens.
    pub fn authenticate(&self, inner: &Inner, token: &str) -> Result<UserInfo, Refusal> {
        let entry = self
            .lock()
            .get(&Token(token.to_owned()))
            .cloned()
            .ok_or(Refusal::Unknown)?;
        if entry.expires.is_some_and(|e| SystemTime::now() > e) {
            return Err(Refusal::Expired);
        }
        if let Some(b) = &entry.bound {
            let current = inner.get(
                &GroupResource::new("", "serviceaccounts"),
                &b.namespace,
                &b.name,
            );
            if current.is_none_or(|sa| sa.uid() != b.uid) {
                return Err(Refusal::ServiceAccountGone);
            }
        }
        Ok(entry.user)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_accounts_have_kubernetes_names_and_groups() {
        let u = UserInfo::service_account("flink-jobs", "flink");
        assert_eq!(u.name, "system:serviceaccount:flink-jobs:flink");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:flink-jobs",
                "system:authenticated"
            ]
        );
        assert!(!u.is_superuser());
        let admin = UserInfo::user("admin", &[MASTERS]);
        assert_eq!(admin.groups, [MASTERS, AUTHENTICATED]);
        assert!(admin.is_superuser());
    }

    #[test]
    fn tokens_are_random_and_never_printed() {
        let a = Token::generate();
        let b = Token::generate();
        assert_ne!(a, b);
        assert_eq!(a.expose().len(), 5 + 64);
        assert_eq!(format!("{a:?}"), "Token(<redacted>)");
        assert!(!format!("{:?}", Some(&a)).contains(a.expose()));
    }
}
