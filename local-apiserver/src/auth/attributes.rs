//! What a request asks to do ([`Attributes`]), derived from its method and URL as Kubernetes'
//! `RequestInfoFactory` does.

use std::collections::HashMap;

use http::{Method, Uri};

use crate::rbac::{Attributes, ResourceTarget, Target};

/// What a request asks to do, derived from its method and URL as Kubernetes'
/// `RequestInfoFactory` does: `/api/<v>/...` and `/apis/<g>/<v>/...` with at least a resource
/// are resource requests; everything else (`/api`, `/api/v1`, `/apis/<g>/<v>`, `/version`,
/// `/openapi/v3`, ...) is a non-resource request whose verb is the lower-case method.
pub(crate) fn request_attributes(method: &Method, uri: &Uri) -> Attributes {
    let path = uri.path();
    let parts: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, mut rest) = match parts.as_slice() {
        ["api", _version, rest @ ..] if !rest.is_empty() => ("", rest),
        ["apis", group, _version, rest @ ..] if !rest.is_empty() => (*group, rest),
        _ => {
            return Attributes {
                verb: method.as_str().to_ascii_lowercase(),
                target: Target::NonResource {
                    path: path.to_owned(),
                },
            };
        }
    };
    let mut t = ResourceTarget {
        group: group.to_owned(),
        ..ResourceTarget::default()
    };
    if let ["namespaces", ns, tail @ ..] = rest {
        (*ns).clone_into(&mut t.namespace);
        if !tail.is_empty() && !matches!(tail[0], "status" | "finalize") {
            rest = tail;
        }
    }
    rest[0].clone_into(&mut t.resource);
    if let Some(name) = rest.get(1) {
        (*name).clone_into(&mut t.name);
    }
    if let Some(sub) = rest.get(2) {
        (*sub).clone_into(&mut t.subresource);
    }
    let query: HashMap<String, String> = uri
        .query()
        .map(|q| {
            url_pairs(q)
                .into_iter()
                .collect::<HashMap<String, String>>()
        })
        .unwrap_or_default();
    let watch = query.get("watch").is_some_and(|v| v == "true" || v == "1");
    let verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if t.name.is_empty() => "list",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if t.name.is_empty() => "deletecollection",
        Method::DELETE => "delete",
        _ => "",
    };
    if matches!(verb, "list" | "watch")
        && t.name.is_empty()
        && let Some(name) = query.get("fieldSelector").and_then(|s| exact_name(s))
    {
        t.name = name;
    }
    Attributes {
        verb: if verb.is_empty() {
            method.as_str().to_ascii_lowercase()
        } else {
            verb.to_owned()
        },
        target: Target::Resource(t),
    }
}

/// Decoded `key=value` pairs of a query string.
fn url_pairs(query: &str) -> Vec<(String, String)> {
    let uri: Uri = format!("/?{query}").parse().unwrap_or_default();
    axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri)
        .map(|q| q.0)
        .unwrap_or_default()
}

/// The name a field selector requires exactly (`metadata.name=x` or `==x` among its terms),
/// if it is a valid path segment.
fn exact_name(selector: &str) -> Option<String> {
    selector.split(',').find_map(|term| {
        let term = term.trim();
        let value = term
            .strip_prefix("metadata.name==")
            .or_else(|| term.strip_prefix("metadata.name="))?;
        let valid =
            !value.is_empty() && value != "." && value != ".." && !value.contains(['/', '%']);
        valid.then(|| value.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authn::{MASTERS, UserInfo};
    use crate::meta::ObjExt;
    use crate::rbac::{self, Decision, Policy, bootstrap_policy};

    fn attrs(method: &Method, uri: &str) -> Attributes {
        request_attributes(method, &uri.parse().expect("uri"))
    }

    fn resource(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            verb: verb.into(),
            target: Target::Resource(ResourceTarget {
                group: group.into(),
                resource: resource.into(),
                subresource: sub.into(),
                namespace: ns.into(),
                name: name.into(),
            }),
        }
    }

    #[test]
    fn requests_map_to_attributes_like_kubernetes() {
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a/configmaps/x"),
            resource("get", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a/configmaps"),
            resource("list", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?watch=true&fieldSelector=metadata.name%3Dx"
            ),
            resource("watch", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name%3D%3Dx,metadata.namespace%3Da"
            ),
            resource("list", "", "configmaps", "", "a", "x")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/api/v1/namespaces/a/configmaps?fieldSelector=metadata.name!%3Dx"
            ),
            resource("list", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::GET,
                "/apis/bluegreen.dev/v1alpha1/flinkbluegreendeployments?watch=1"
            ),
            resource(
                "watch",
                "bluegreen.dev",
                "flinkbluegreendeployments",
                "",
                "",
                ""
            )
        );
        assert_eq!(
            attrs(
                &Method::PUT,
                "/apis/bluegreen.dev/v1alpha1/namespaces/a/flinkbluegreendeployments/o/status"
            ),
            resource(
                "update",
                "bluegreen.dev",
                "flinkbluegreendeployments",
                "status",
                "a",
                "o"
            )
        );
        assert_eq!(
            attrs(
                &Method::POST,
                "/api/v1/namespaces/a/serviceaccounts/sa/token"
            ),
            resource("create", "", "serviceaccounts", "token", "a", "sa")
        );
        assert_eq!(
            attrs(&Method::POST, "/apis/events.k8s.io/v1/namespaces/a/events"),
            resource("create", "events.k8s.io", "events", "", "a", "")
        );
        assert_eq!(
            attrs(
                &Method::PATCH,
                "/apis/coordination.k8s.io/v1/namespaces/a/leases/l"
            ),
            resource("patch", "coordination.k8s.io", "leases", "", "a", "l")
        );
        assert_eq!(
            attrs(&Method::DELETE, "/api/v1/namespaces/a/configmaps"),
            resource("deletecollection", "", "configmaps", "", "a", "")
        );
        assert_eq!(
            attrs(&Method::DELETE, "/api/v1/namespaces/a/configmaps/x"),
            resource("delete", "", "configmaps", "", "a", "x")
        );
        // A namespace is its own namespace; its status is a subresource.
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces/a"),
            resource("get", "", "namespaces", "", "a", "a")
        );
        assert_eq!(
            attrs(&Method::PUT, "/api/v1/namespaces/a/status"),
            resource("update", "", "namespaces", "status", "a", "a")
        );
        assert_eq!(
            attrs(&Method::GET, "/api/v1/namespaces"),
            resource("list", "", "namespaces", "", "", "")
        );
    }

    #[test]
    fn discovery_and_other_paths_are_non_resource_requests() {
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
            "/openapi/v3/apis/apps/v1",
            "/healthz",
        ] {
            assert_eq!(
                attrs(&Method::GET, path),
                Attributes {
                    verb: "get".into(),
                    target: Target::NonResource { path: path.into() }
                },
                "{path}"
            );
        }
        assert_eq!(attrs(&Method::POST, "/version").verb, "post");
    }

    #[test]
    fn the_bootstrap_policy_grants_discovery_to_every_authenticated_user() {
        let policy = Policy {
            cluster_roles: bootstrap_policy()
                .into_iter()
                .filter(|o| o["kind"] == "ClusterRole")
                .map(|o| {
                    (
                        o.name().to_owned(),
                        serde_json::from_value(o).expect("ClusterRole"),
                    )
                })
                .collect(),
            cluster_role_bindings: bootstrap_policy()
                .into_iter()
                .filter(|o| o["kind"] == "ClusterRoleBinding")
                .map(|o| serde_json::from_value(o).expect("ClusterRoleBinding"))
                .collect(),
            ..Policy::default()
        };
        let sa = UserInfo::service_account("x", "y");
        for path in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps/v1",
            "/version",
            "/openapi/v3",
            "/openapi/v3/api/v1",
            "/healthz",
        ] {
            assert_eq!(
                rbac::authorize(&policy, &sa, &attrs(&Method::GET, path)),
                Decision::Allow,
                "{path}"
            );
        }
        assert_ne!(
            rbac::authorize(&policy, &sa, &attrs(&Method::POST, "/api")),
            Decision::Allow
        );
        assert_ne!(
            rbac::authorize(
                &policy,
                &sa,
                &attrs(&Method::GET, "/api/v1/namespaces/x/configmaps")
            ),
            Decision::Allow
        );
        let admin = UserInfo::user("someone", &[MASTERS]);
        assert_eq!(
            rbac::authorize(
                &policy,
                &admin,
                &attrs(&Method::DELETE, "/api/v1/namespaces/x")
            ),
            Decision::Allow
        );
    }
}
