//! Whether one set of rules holds every right of another (Kubernetes' `validation.Covers`), as
//! the escalation check asks.

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::{has, list};

/// Splits a rule into rules of one verb, one group, one resource and at most one name (or one
/// verb and one non-resource URL): Kubernetes' `BreakdownRule`.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
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
