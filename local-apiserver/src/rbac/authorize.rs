//! Whether a request is allowed (Kubernetes' `RBACAuthorizer`), and the message of a `403`.

use std::fmt::Write as _;

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::{Attributes, Policy, Target, has, list};
use crate::authn::UserInfo;

/// The outcome of authorizing one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A rule (or `system:masters`) allows it.
    Allow,
    /// Nothing allows it; the reason lists role-resolution errors (empty when there were none).
    Deny { reason: String },
}

/// Whether `user` may do `attrs`: members of `system:masters` may do anything; anyone else
/// needs a rule that allows it.
pub(crate) fn authorize(policy: &Policy, user: &UserInfo, attrs: &Attributes) -> Decision {
    if user.is_superuser() {
        return Decision::Allow;
    }
    let namespace = match &attrs.target {
        Target::Resource(r) => r.namespace.as_str(),
        Target::NonResource { .. } => "",
    };
    let (allowed, errors) = policy.visit_rules(user, namespace, |rule| rule_allows(attrs, rule));
    if allowed {
        Decision::Allow
    } else if errors.is_empty() {
        Decision::Deny {
            reason: String::new(),
        }
    } else {
        Decision::Deny {
            reason: format!("RBAC: [{}]", errors.join(", ")),
        }
    }
}

/// Whether one rule allows `attrs` (Kubernetes' `RuleAllows`).
pub(super) fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
    let verb = has(&rule.verbs, "*") || has(&rule.verbs, &attrs.verb);
    match &attrs.target {
        Target::Resource(r) => {
            let groups = list(rule.api_groups.as_ref());
            verb && (has(groups, "*") || has(groups, &r.group))
                && resource_matches(list(rule.resources.as_ref()), &r.combined(), &r.subresource)
                && name_matches(list(rule.resource_names.as_ref()), &r.name)
        }
        Target::NonResource { path } => {
            verb && list(rule.non_resource_urls.as_ref())
                .iter()
                .any(|u| url_matches(u, path))
        }
    }
}

/// `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule_resources: &[String], combined: &str, subresource: &str) -> bool {
    rule_resources.iter().any(|r| {
        r == "*"
            || r == combined
            || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
    })
}

/// No names in the rule: any; else the request's name must be listed (a request without a
/// name, such as a create or an unrestricted list, never matches a rule with names).
fn name_matches(rule_names: &[String], name: &str) -> bool {
    rule_names.is_empty() || has(rule_names, name)
}

/// `*`, the exact path, or a prefix ending in `*`.
fn url_matches(rule_url: &str, path: &str) -> bool {
    rule_url == "*"
        || rule_url == path
        || rule_url
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix))
}

/// The message of Kubernetes' 403 for a denied request (`responsewriters.forbiddenMessage`
/// wrapped by `errors.NewForbidden`).
pub(crate) fn forbidden_message(user: &UserInfo, attrs: &Attributes, reason: &str) -> String {
    let mut why = match &attrs.target {
        Target::NonResource { path } => {
            format!(
                "User \"{}\" cannot {} path \"{path}\"",
                user.name, attrs.verb
            )
        }
        Target::Resource(r) if r.namespace.is_empty() => format!(
            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" at the cluster scope",
            user.name,
            attrs.verb,
            r.combined(),
            r.group
        ),
        Target::Resource(r) => format!(
            "User \"{}\" cannot {} resource \"{}\" in API group \"{}\" in the namespace \"{}\"",
            user.name,
            attrs.verb,
            r.combined(),
            r.group,
            r.namespace
        ),
    };
    if !reason.is_empty() {
        let _ = write!(why, ": {reason}");
    }
    match &attrs.target {
        Target::NonResource { .. } => format!("forbidden: {why}"),
        Target::Resource(r) if r.name.is_empty() => {
            format!("{} is forbidden: {why}", r.qualified())
        }
        Target::Resource(r) => format!("{} \"{}\" is forbidden: {why}", r.qualified(), r.name),
    }
}
