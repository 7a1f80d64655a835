//! RBAC as Kubernetes evaluates it (`k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac` and
//! `pkg/registry/rbac/validation`): rules of Roles and ClusterRoles reached through RoleBindings
//! and ClusterRoleBindings, and the escalation check on writes of RBAC objects.
//!
//! Pure functions over a [`Policy`] (a snapshot of the RBAC objects); the HTTP side is in
//! `auth.rs`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde_json::Value;

use super::authn::UserInfo;
use super::meta::ObjExt;
use super::resources::GroupResource;
use super::store::Inner;

/// The RBAC API group.
pub(crate) const GROUP: &str = super::resources::RBAC;

/// What a request asks to do (Kubernetes' `authorizer.Attributes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection` (or
    /// `escalate`, `bind`) for resource requests; the lower-case HTTP method otherwise.
    pub verb: String,
    /// What the verb applies to.
    pub target: Target,
}

/// A resource (`/api/...`, `/apis/...`) or any other path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// An API object or collection.
    Resource(ResourceTarget),
    /// A path that is not an API resource (`/api`, `/apis/<group>/<version>`, `/version`, ...).
    NonResource {
        /// The request path.
        path: String,
    },
}

/// The object or collection a resource request addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResourceTarget {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    /// Empty for cluster-scoped objects and for lists across all namespaces.
    pub namespace: String,
    /// Empty for collections, unless a list or watch selects one name with a
    /// `metadata.name` field selector.
    pub name: String,
}

impl ResourceTarget {
    /// `resource` or `resource/subresource`, the form rules name.
    pub fn combined(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// `resource.group` (or `resource` in the core group), as in error messages.
    pub fn qualified(&self) -> String {
        qualified(&self.resource, &self.group)
    }
}

fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// The RBAC objects of a server at one moment, typed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    pub cluster_roles: BTreeMap<String, ClusterRole>,
    /// Keyed by `(namespace, name)`.
    pub roles: BTreeMap<(String, String), Role>,
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// Keyed by namespace.
    pub role_bindings: BTreeMap<String, Vec<RoleBinding>>,
}

impl Policy {
    /// Reads every Role, ClusterRole, RoleBinding and ClusterRoleBinding in the store. An
    /// object that does not parse as its type grants nothing (and is logged).
    pub fn from_store(inner: &Inner) -> Self {
        fn typed<T: serde::de::DeserializeOwned>(obj: &Value) -> Option<T> {
            match serde_json::from_value(obj.clone()) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!(name = obj.name(), namespace = obj.namespace(), error = %e, "RBAC object ignored: it does not parse");
                    None
                }
            }
        }
        let mut policy = Self::default();
        for (_, obj) in inner.iter(&GroupResource::new(GROUP, "clusterroles"), None) {
            if let Some(role) = typed::<ClusterRole>(obj) {
                policy.cluster_roles.insert(obj.name().to_owned(), role);
            }
        }
        for ((ns, name), obj) in inner.iter(&GroupResource::new(GROUP, "roles"), None) {
            if let Some(role) = typed::<Role>(obj) {
                policy.roles.insert((ns.clone(), name.clone()), role);
            }
        }
        for (_, obj) in inner.iter(&GroupResource::new(GROUP, "clusterrolebindings"), None) {
            if let Some(b) = typed::<ClusterRoleBinding>(obj) {
                policy.cluster_role_bindings.push(b);
            }
        }
        for ((ns, _), obj) in inner.iter(&GroupResource::new(GROUP, "rolebindings"), None) {
            if let Some(b) = typed::<RoleBinding>(obj) {
                policy.role_bindings.entry(ns.clone()).or_default().push(b);
            }
        }
        policy
    }

    /// The rules a role reference grants in `namespace` (the namespace of the binding; empty
    /// for a ClusterRoleBinding), or the error Kubernetes reports when the role is missing.
    fn role_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<&[PolicyRule], String> {
        match role_ref.kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(&role_ref.name)
                .map(|r| r.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| format!("clusterrole.{GROUP} \"{}\" not found", role_ref.name)),
            "Role" if !namespace.is_empty() => self
                .roles
                .get(&(namespace.to_owned(), role_ref.name.clone()))
                .map(|r| r.rules.as_deref().unwrap_or_default())
                .ok_or_else(|| format!("role.{GROUP} \"{}\" not found", role_ref.name)),
            other => Err(format!("unsupported role reference kind: \"{other}\"")),
        }
    }

    /// Visits the rules granted to `user` in `namespace` (cluster-wide bindings first, then
    /// the namespace's RoleBindings) until `visit` returns `true`. Returns whether it did, and
    /// the role-resolution errors met on the way.
    fn visit_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        mut visit: impl FnMut(&PolicyRule) -> bool,
    ) -> (bool, Vec<String>) {
        let mut errors = Vec::new();
        for binding in &self.cluster_role_bindings {
            if !binding
                .subjects
                .iter()
                .flatten()
                .any(|s| applies_to(s, user, ""))
            {
                continue;
            }
            match self.role_rules(&binding.role_ref, "") {
                Ok(rules) => {
                    if rules.iter().any(&mut visit) {
                        return (true, errors);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        if namespace.is_empty() {
            return (false, errors);
        }
        for binding in self.role_bindings.get(namespace).into_iter().flatten() {
            if !binding
                .subjects
                .iter()
                .flatten()
                .any(|s| applies_to(s, user, namespace))
            {
                continue;
            }
            match self.role_rules(&binding.role_ref, namespace) {
                Ok(rules) => {
                    if rules.iter().any(&mut visit) {
                        return (true, errors);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        (false, errors)
    }

    /// Every rule granted to `user` in `namespace` (cluster-wide ones included), and the
    /// role-resolution errors.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let (_, errors) = self.visit_rules(user, namespace, |r| {
            rules.push(r.clone());
            false
        });
        (rules, errors)
    }
}

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

/// Whether a binding subject names `user`; a ServiceAccount subject without a namespace means
/// the binding's namespace (`namespace`, empty for ClusterRoleBindings: never matches).
fn applies_to(subject: &Subject, user: &UserInfo, namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => user.name == subject.name,
        "Group" => user.groups.contains(&subject.name),
        "ServiceAccount" => {
            let sa_namespace = subject.namespace.as_deref().unwrap_or(namespace);
            !sa_namespace.is_empty()
                && user.name == UserInfo::service_account_name(sa_namespace, &subject.name)
        }
        _ => false,
    }
}

fn has(list: &[String], item: &str) -> bool {
    list.iter().any(|x| x == item)
}

fn list(v: Option<&Vec<String>>) -> &[String] {
    v.map_or(&[], Vec::as_slice)
}

/// Whether one rule allows `attrs` (Kubernetes' `RuleAllows`).
pub(crate) fn rule_allows(attrs: &Attributes, rule: &PolicyRule) -> bool {
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

/// Splits a rule into rules of one verb, one group, one resource and at most one name (or one
/// verb and one non-resource URL): Kubernetes' `BreakdownRule`.
pub(crate) fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| Some(vec![s.clone()]);
    let mut out = Vec::new();
    for group in list(rule.api_groups.as_ref()) {
        for resource in list(rule.resources.as_ref()) {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: vec![verb.clone()],
                    ..PolicyRule::default()
                };
                let names = list(rule.resource_names.as_ref());
                if names.is_empty() {
                    out.push(base);
                } else {
                    out.extend(names.iter().map(|n| PolicyRule {
                        resource_names: one(n),
                        ..base.clone()
                    }));
                }
            }
        }
    }
    for url in list(rule.non_resource_urls.as_ref()) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

/// Whether `owner` covers a broken-down rule (Kubernetes' `ruleCovers`).
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let all = |set: &[String], items: &[String]| items.iter().all(|i| has(set, i));
    let owner_groups = list(owner.api_groups.as_ref());
    let owner_resources = list(owner.resources.as_ref());
    let owner_names = list(owner.resource_names.as_ref());
    let sub_names = list(sub.resource_names.as_ref());
    let verbs = has(&owner.verbs, "*") || all(&owner.verbs, &sub.verbs);
    let groups = has(owner_groups, "*") || all(owner_groups, list(sub.api_groups.as_ref()));
    let resources = has(owner_resources, "*")
        || list(sub.resources.as_ref()).iter().all(|r| {
            has(owner_resources, r)
                || r.split_once('/')
                    .is_some_and(|(_, sub)| has(owner_resources, &format!("*/{sub}")))
        });
    let urls = list(sub.non_resource_urls.as_ref()).iter().all(|path| {
        list(owner.non_resource_urls.as_ref())
            .iter()
            .any(|o| o == path || o.strip_suffix('*').is_some_and(|p| path.starts_with(p)))
    });
    let names = if sub_names.is_empty() {
        owner_names.is_empty()
    } else {
        owner_names.is_empty() || all(owner_names, sub_names)
    };
    verbs && groups && resources && names && urls
}

/// The parts of `servant` that `owner` does not cover (empty: `owner` holds everything in
/// `servant`); Kubernetes' `validation.Covers`.
pub(crate) fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// One rule in Kubernetes' compact form, e.g.
/// `{APIGroups:[""], Resources:["configmaps"], Verbs:["get"]}`.
pub(crate) fn compact(rule: &PolicyRule) -> String {
    let quoted = |v: &[String]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut parts = Vec::new();
    for (label, values) in [
        ("APIGroups", rule.api_groups.as_ref()),
        ("Resources", rule.resources.as_ref()),
        ("ResourceNames", rule.resource_names.as_ref()),
        ("NonResourceURLs", rule.non_resource_urls.as_ref()),
    ] {
        if let Some(v) = values.filter(|v| !v.is_empty() || label == "APIGroups") {
            parts.push(format!("{label}:[{}]", quoted(v)));
        }
    }
    parts.push(format!("Verbs:[{}]", quoted(&rule.verbs)));
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        PolicyRule {
            api_groups: Some(v(groups)),
            resources: Some(v(resources)),
            verbs: v(verbs),
            ..PolicyRule::default()
        }
    }

    fn named(mut r: PolicyRule, names: &[&str]) -> PolicyRule {
        r.resource_names = Some(names.iter().map(|x| (*x).to_owned()).collect());
        r
    }

    fn urls(paths: &[&str], verbs: &[&str]) -> PolicyRule {
        PolicyRule {
            non_resource_urls: Some(paths.iter().map(|x| (*x).to_owned()).collect()),
            verbs: verbs.iter().map(|x| (*x).to_owned()).collect(),
            ..PolicyRule::default()
        }
    }

    fn res(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        let (resource, subresource) = resource.split_once('/').unwrap_or((resource, ""));
        Attributes {
            verb: verb.into(),
            target: Target::Resource(ResourceTarget {
                group: group.into(),
                resource: resource.into(),
                subresource: subresource.into(),
                namespace: ns.into(),
                name: name.into(),
            }),
        }
    }

    fn path(verb: &str, p: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            target: Target::NonResource { path: p.into() },
        }
    }

    fn meta(ns: Option<&str>, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            namespace: ns.map(Into::into),
            ..ObjectMeta::default()
        }
    }

    fn subject(kind: &str, name: &str, ns: Option<&str>) -> Subject {
        Subject {
            kind: kind.into(),
            name: name.into(),
            namespace: ns.map(Into::into),
            api_group: None,
        }
    }

    fn role_ref(kind: &str, name: &str) -> RoleRef {
        RoleRef {
            api_group: Some(GROUP.into()),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn cluster_role(p: &mut Policy, name: &str, rules: Vec<PolicyRule>) {
        p.cluster_roles.insert(
            name.into(),
            ClusterRole {
                metadata: meta(None, name),
                rules: Some(rules),
                aggregation_rule: None,
            },
        );
    }

    fn role(p: &mut Policy, ns: &str, name: &str, rules: Vec<PolicyRule>) {
        p.roles.insert(
            (ns.into(), name.into()),
            Role {
                metadata: meta(Some(ns), name),
                rules: Some(rules),
            },
        );
    }

    fn crb(p: &mut Policy, name: &str, role: &str, subjects: Vec<Subject>) {
        p.cluster_role_bindings.push(ClusterRoleBinding {
            metadata: meta(None, name),
            role_ref: role_ref("ClusterRole", role),
            subjects: Some(subjects),
        });
    }

    fn rb(p: &mut Policy, ns: &str, kind: &str, role: &str, subjects: Vec<Subject>) {
        p.role_bindings
            .entry(ns.into())
            .or_default()
            .push(RoleBinding {
                metadata: meta(Some(ns), role),
                role_ref: role_ref(kind, role),
                subjects: Some(subjects),
            });
    }

    fn sa(ns: &str, name: &str) -> UserInfo {
        UserInfo::service_account(ns, name)
    }

    fn allowed(p: &Policy, u: &UserInfo, a: &Attributes) -> bool {
        authorize(p, u, a) == Decision::Allow
    }

    #[test]
    fn verbs_match_exactly_or_by_star() {
        let r = rule(&[""], &["configmaps"], &["get", "list"]);
        assert!(rule_allows(&res("get", "", "configmaps", "a", "x"), &r));
        assert!(rule_allows(&res("list", "", "configmaps", "a", ""), &r));
        assert!(!rule_allows(&res("watch", "", "configmaps", "a", ""), &r));
        assert!(!rule_allows(&res("update", "", "configmaps", "a", "x"), &r));
        let all = rule(&[""], &["configmaps"], &["*"]);
        for verb in [
            "get",
            "list",
            "watch",
            "create",
            "update",
            "patch",
            "delete",
            "deletecollection",
        ] {
            assert!(
                rule_allows(&res(verb, "", "configmaps", "a", ""), &all),
                "{verb}"
            );
        }
    }

    #[test]
    fn api_groups_match_exactly_or_by_star() {
        let r = rule(&["apps"], &["deployments"], &["get"]);
        assert!(rule_allows(
            &res("get", "apps", "deployments", "a", "d"),
            &r
        ));
        assert!(!rule_allows(&res("get", "", "deployments", "a", "d"), &r));
        assert!(!rule_allows(
            &res("get", "extensions", "deployments", "a", "d"),
            &r
        ));
        let core = rule(&[""], &["configmaps"], &["get"]);
        assert!(!rule_allows(
            &res("get", "apps", "configmaps", "a", "c"),
            &core
        ));
        let any = rule(&["*"], &["deployments"], &["get"]);
        assert!(rule_allows(
            &res("get", "extensions", "deployments", "a", "d"),
            &any
        ));
    }

    #[test]
    fn subresources_need_their_own_rule_or_a_star() {
        let main = rule(&["apps"], &["deployments"], &["update"]);
        assert!(rule_allows(
            &res("update", "apps", "deployments", "a", "d"),
            &main
        ));
        assert!(!rule_allows(
            &res("update", "apps", "deployments/status", "a", "d"),
            &main
        ));
        let status = rule(
            &["bluegreen.dev"],
            &["flinkbluegreendeployments/status"],
            &["update"],
        );
        let a = res(
            "update",
            "bluegreen.dev",
            "flinkbluegreendeployments/status",
            "a",
            "x",
        );
        assert!(rule_allows(&a, &status));
        let main_req = res(
            "update",
            "bluegreen.dev",
            "flinkbluegreendeployments",
            "a",
            "x",
        );
        assert!(
            !rule_allows(&main_req, &status),
            "a subresource rule grants nothing on the object"
        );
        let any_status = rule(&["*"], &["*/status"], &["update"]);
        assert!(rule_allows(&a, &any_status));
        assert!(!rule_allows(&main_req, &any_status));
        let star = rule(&["*"], &["*"], &["update"]);
        assert!(rule_allows(&a, &star));
        assert!(rule_allows(&main_req, &star));
    }

    #[test]
    fn resource_names_restrict_named_requests_and_field_selected_lists() {
        let r = named(
            rule(
                &[""],
                &["configmaps"],
                &["get", "list", "watch", "update", "create"],
            ),
            &["orders-bluegreen"],
        );
        assert!(rule_allows(
            &res("get", "", "configmaps", "a", "orders-bluegreen"),
            &r
        ));
        assert!(!rule_allows(
            &res("get", "", "configmaps", "a", "other"),
            &r
        ));
        assert!(rule_allows(
            &res("update", "", "configmaps", "a", "orders-bluegreen"),
            &r
        ));
        // A list or watch names an object only through a metadata.name field selector.
        assert!(rule_allows(
            &res("watch", "", "configmaps", "a", "orders-bluegreen"),
            &r
        ));
        assert!(!rule_allows(&res("watch", "", "configmaps", "a", ""), &r));
        assert!(!rule_allows(&res("list", "", "configmaps", "a", ""), &r));
        // A create has no name yet.
        assert!(!rule_allows(&res("create", "", "configmaps", "a", ""), &r));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_prefix() {
        let r = urls(&["/api", "/apis/*", "/version"], &["get"]);
        assert!(rule_allows(&path("get", "/api"), &r));
        assert!(!rule_allows(&path("get", "/api/v1"), &r));
        assert!(rule_allows(&path("get", "/apis/apps/v1"), &r));
        assert!(rule_allows(&path("get", "/version"), &r));
        assert!(!rule_allows(&path("post", "/version"), &r));
        assert!(!rule_allows(&path("get", "/healthz"), &r));
        assert!(rule_allows(
            &path("get", "/anything"),
            &urls(&["*"], &["get"])
        ));
        // URL rules say nothing about resources, and resource rules nothing about URLs.
        assert!(!rule_allows(
            &res("get", "", "configmaps", "a", "x"),
            &urls(&["*"], &["*"])
        ));
        assert!(!rule_allows(
            &path("get", "/api"),
            &rule(&["*"], &["*"], &["*"])
        ));
    }

    #[test]
    fn role_bindings_grant_in_their_namespace_only_and_cluster_role_bindings_everywhere() {
        let mut p = Policy::default();
        let cm = vec![rule(&[""], &["configmaps"], &["get", "list"])];
        role(&mut p, "jobs", "reader", cm.clone());
        rb(
            &mut p,
            "jobs",
            "Role",
            "reader",
            vec![subject("ServiceAccount", "flink", None)],
        );
        let flink = sa("jobs", "flink");
        assert!(allowed(
            &p,
            &flink,
            &res("get", "", "configmaps", "jobs", "x")
        ));
        assert!(!allowed(
            &p,
            &flink,
            &res("get", "", "configmaps", "other", "x")
        ));
        // A list across all namespaces is cluster-scoped: RoleBindings do not reach it.
        assert!(!allowed(&p, &flink, &res("list", "", "configmaps", "", "")));
        // The ServiceAccount subject without a namespace is the binding's namespace.
        assert!(!allowed(
            &p,
            &sa("other", "flink"),
            &res("get", "", "configmaps", "jobs", "x")
        ));

        // A RoleBinding to a ClusterRole grants the ClusterRole's rules in that namespace only.
        cluster_role(
            &mut p,
            "cm-writer",
            vec![rule(&[""], &["configmaps"], &["update"])],
        );
        rb(
            &mut p,
            "jobs",
            "ClusterRole",
            "cm-writer",
            vec![subject("User", "alice", None)],
        );
        let alice = UserInfo::user("alice", &[]);
        assert!(allowed(
            &p,
            &alice,
            &res("update", "", "configmaps", "jobs", "x")
        ));
        assert!(!allowed(
            &p,
            &alice,
            &res("update", "", "configmaps", "other", "x")
        ));

        // A ClusterRoleBinding grants everywhere, cluster scope included.
        crb(
            &mut p,
            "ops",
            "cm-writer",
            vec![subject("Group", "ops", None)],
        );
        let bob = UserInfo::user("bob", &["ops"]);
        assert!(allowed(
            &p,
            &bob,
            &res("update", "", "configmaps", "any", "x")
        ));
        assert!(!allowed(
            &p,
            &bob,
            &res("get", "", "configmaps", "any", "x")
        ));
        // A ServiceAccount subject of a ClusterRoleBinding needs its namespace.
        crb(
            &mut p,
            "no-ns",
            "cm-writer",
            vec![subject("ServiceAccount", "ghost", None)],
        );
        assert!(!allowed(
            &p,
            &sa("any", "ghost"),
            &res("update", "", "configmaps", "any", "x")
        ));
        crb(
            &mut p,
            "with-ns",
            "cm-writer",
            vec![subject("ServiceAccount", "ctl", Some("sys"))],
        );
        assert!(allowed(
            &p,
            &sa("sys", "ctl"),
            &res("update", "", "configmaps", "any", "x")
        ));
    }

    #[test]
    fn cluster_scoped_resources_need_a_cluster_role_binding() {
        let mut p = Policy::default();
        cluster_role(
            &mut p,
            "ns-reader",
            vec![rule(&[""], &["namespaces"], &["get"])],
        );
        rb(
            &mut p,
            "jobs",
            "ClusterRole",
            "ns-reader",
            vec![subject("User", "alice", None)],
        );
        let alice = UserInfo::user("alice", &[]);
        assert!(!allowed(
            &p,
            &alice,
            &res("get", "", "namespaces", "", "jobs")
        ));
        crb(
            &mut p,
            "ns-reader",
            "ns-reader",
            vec![subject("User", "alice", None)],
        );
        assert!(allowed(
            &p,
            &alice,
            &res("get", "", "namespaces", "", "jobs")
        ));
    }

    #[test]
    fn groups_and_superusers() {
        let mut p = Policy::default();
        cluster_role(
            &mut p,
            "discovery",
            vec![urls(&["/api", "/api/*"], &["get"])],
        );
        crb(
            &mut p,
            "discovery",
            "discovery",
            vec![subject("Group", "system:authenticated", None)],
        );
        assert!(allowed(&p, &sa("x", "y"), &path("get", "/api/v1")));
        assert!(!allowed(&p, &sa("x", "y"), &path("get", "/version")));
        let admin = UserInfo::user("root", &["system:masters"]);
        assert!(allowed(
            &p,
            &admin,
            &res("delete", "", "namespaces", "", "kube-system")
        ));
        assert!(allowed(&p, &admin, &path("get", "/anything")));
    }

    #[test]
    fn a_missing_role_grants_nothing_and_is_named_in_the_reason() {
        let mut p = Policy::default();
        rb(
            &mut p,
            "jobs",
            "Role",
            "gone",
            vec![subject("User", "alice", None)],
        );
        let alice = UserInfo::user("alice", &[]);
        let a = res("get", "", "configmaps", "jobs", "x");
        assert_eq!(
            authorize(&p, &alice, &a),
            Decision::Deny {
                reason: format!("RBAC: [role.{GROUP} \"gone\" not found]")
            }
        );
    }

    #[test]
    fn forbidden_messages_read_like_kubernetes() {
        let u = sa("bluegreen-system", "bluegreen-controller");
        assert_eq!(
            forbidden_message(
                &u,
                &res("list", "bluegreen.dev", "flinkbluegreendeployments", "", ""),
                ""
            ),
            "flinkbluegreendeployments.bluegreen.dev is forbidden: User \"system:serviceaccount:bluegreen-system:bluegreen-controller\" cannot list resource \"flinkbluegreendeployments\" in API group \"bluegreen.dev\" at the cluster scope"
        );
        assert_eq!(
            forbidden_message(
                &u,
                &res(
                    "update",
                    "bluegreen.dev",
                    "flinkbluegreendeployments/status",
                    "default",
                    "orders"
                ),
                ""
            ),
            "flinkbluegreendeployments.bluegreen.dev \"orders\" is forbidden: User \"system:serviceaccount:bluegreen-system:bluegreen-controller\" cannot update resource \"flinkbluegreendeployments/status\" in API group \"bluegreen.dev\" in the namespace \"default\""
        );
        assert_eq!(
            forbidden_message(
                &u,
                &res("get", "", "configmaps", "default", "x"),
                "RBAC: [role.x not found]"
            ),
            "configmaps \"x\" is forbidden: User \"system:serviceaccount:bluegreen-system:bluegreen-controller\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\": RBAC: [role.x not found]"
        );
        assert_eq!(
            forbidden_message(&u, &path("get", "/version"), ""),
            "forbidden: User \"system:serviceaccount:bluegreen-system:bluegreen-controller\" cannot get path \"/version\""
        );
    }

    #[test]
    fn coverage_breaks_rules_down_to_single_rights() {
        let owner = vec![
            rule(&[""], &["configmaps"], &["get", "list", "watch"]),
            rule(&["apps"], &["*/status"], &["update"]),
        ];
        assert!(
            uncovered(
                &owner,
                &[named(
                    rule(&[""], &["configmaps"], &["get", "watch"]),
                    &["a", "b"]
                )]
            )
            .is_empty()
        );
        assert!(
            uncovered(
                &owner,
                &[rule(&["apps"], &["deployments/status"], &["update"])]
            )
            .is_empty()
        );
        let missing = uncovered(
            &owner,
            &[rule(&[""], &["configmaps", "secrets"], &["get", "update"])],
        );
        assert_eq!(
            missing.iter().map(compact).collect::<Vec<_>>(),
            [
                "{APIGroups:[\"\"], Resources:[\"configmaps\"], Verbs:[\"update\"]}",
                "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}",
                "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"update\"]}",
            ]
        );
        // Rights on named objects do not cover rights on every object.
        let named_owner = vec![named(rule(&[""], &["configmaps"], &["get"]), &["a"])];
        assert_eq!(
            uncovered(&named_owner, &[rule(&[""], &["configmaps"], &["get"])]).len(),
            1
        );
        assert!(
            uncovered(
                &named_owner,
                &[named(rule(&[""], &["configmaps"], &["get"]), &["a"])]
            )
            .is_empty()
        );
        assert!(
            uncovered(
                &[urls(&["/apis/*"], &["get"])],
                &[urls(&["/apis/apps"], &["get"])]
            )
            .is_empty()
        );
        assert_eq!(
            uncovered(
                &[urls(&["/apis/*"], &["get"])],
                &[urls(&["/api"], &["get"])]
            )
            .len(),
            1
        );
    }
}
