//! Unit tests of RBAC evaluation and rule coverage.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::authorize::rule_allows;
use super::coverage::{compact, uncovered};
use super::*;
use crate::authn::UserInfo;

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
