//! The credential of the gates of a child in another cluster (issue 27): they read the
//! coordination ConfigMap in this (the home) cluster through a token of their own.
//!
//! In the home namespace, the ServiceAccount `<child>-bluegreen-remote-gate` and a RoleBinding of
//! the same name to the gates' Role (`crate::gate_rbac`: get/list/watch on that one ConfigMap);
//! in the child's namespace of the remote cluster, the Secret `<child>-bluegreen-home` with a
//! token of that ServiceAccount (TokenRequest) under `token` and a kubeconfig for the home API
//! server under `kubeconfig` that reads it (`tokenFile: token`, relative: kube-rs and client-go
//! resolve it against the kubeconfig's directory and re-read it, so a rotated token is picked
//! up). `crate::injection` mounts the Secret for the sidecar. The Secret is written before the
//! child is created ([`ensure`], from `crate::execute`), rotated at each reconcile once less than
//! [`GateTokens::rotate_below`](crate::context::GateTokens) of its token's life is left, and
//! removed with the ServiceAccount and RoleBinding once the child is gone ([`remove`]).

use std::collections::BTreeMap;
use std::time::Duration;

use bluegreen_protocol::Color;
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{AuthInfo, Cluster, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext};

use crate::clusters::Reaches;
use crate::observed::Observed;

use crate::clusters::Reach;
use crate::context::{Context, GateTokens, HomeApi};
use crate::error::{Error, Result, SpecError};
use crate::execute::{apply_gate_role, delete_if_present};
use crate::gate_rbac;
use crate::names::{FIELD_MANAGER, LABEL_COLOR, LABEL_DEPLOYMENT, child_name};
use crate::resource::{ChildClusters, FlinkBlueGreenDeployment, TargetCluster};

/// The annotation of the Secret with its token's expiry (RFC 3339).
pub const TOKEN_EXPIRES_ANNOTATION: &str = "bluegreen.dev/token-expires";
/// The Secret's key holding the kubeconfig.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// The Secret's key holding the token (the kubeconfig's `tokenFile`).
pub const TOKEN_KEY: &str = "token";
/// The field that names the home API server per resource.
pub const HOME_API_FIELD: &str = "spec.cluster.homeApiServer";
const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The names inside the kubeconfig.
const KUBECONFIG_NAME: &str = "bluegreen-home";

/// The home ServiceAccount (and RoleBinding) of the remote gates of `deployment`'s `color`.
pub fn service_account_name(deployment: &str, color: Color) -> String {
    format!("{}-bluegreen-remote-gate", child_name(deployment, color))
}

/// The Secret in the remote cluster with the gates' kubeconfig for the home API server.
pub fn secret_name(deployment: &str, color: Color) -> String {
    format!("{}-bluegreen-home", child_name(deployment, color))
}

/// The home API server's URL for gates in `cluster`: its `homeApiServer`, else the controller's
/// `--home-api-server`; refused (naming both) when neither is set.
pub fn home_server<'a>(
    cluster: &'a TargetCluster,
    home: &'a HomeApi,
) -> Result<&'a str, SpecError> {
    cluster
        .home_api_server
        .as_deref()
        .or(home.server.as_deref())
        .ok_or_else(|| {
            SpecError::new(
                HOME_API_FIELD,
                "is not set and the controller has no --home-api-server (BLUEGREEN_HOME_API_SERVER): \
                 the gates of a job in another cluster read the coordination ConfigMap from this \
                 cluster's API server; set either to its URL as pods in the target cluster reach it",
            )
        })
}

/// The kubeconfig of the remote gates: the home API server `server` (with `ca_pem` as its CA when
/// known), a user whose token is the file `token` next to the kubeconfig, the home namespace.
pub fn kubeconfig(server: &str, ca_pem: Option<&[u8]>, namespace: &str) -> Kubeconfig {
    // ByteString serialises as base64, the encoding of `certificate-authority-data`.
    let ca_data = ca_pem.and_then(|pem| match serde_json::to_value(ByteString(pem.to_vec())) {
        Ok(serde_json::Value::String(data)) => Some(data),
        _ => None,
    });
    Kubeconfig {
        api_version: Some("v1".to_owned()),
        kind: Some("Config".to_owned()),
        clusters: vec![NamedCluster {
            name: KUBECONFIG_NAME.to_owned(),
            cluster: Some(Cluster {
                server: Some(server.to_owned()),
                certificate_authority_data: ca_data,
                ..Cluster::default()
            }),
            ..NamedCluster::default()
        }],
        auth_infos: vec![NamedAuthInfo {
            name: KUBECONFIG_NAME.to_owned(),
            auth_info: Some(AuthInfo {
                token_file: Some(TOKEN_KEY.to_owned()),
                ..AuthInfo::default()
            }),
            ..NamedAuthInfo::default()
        }],
        contexts: vec![NamedContext {
            name: KUBECONFIG_NAME.to_owned(),
            context: Some(kube::config::Context {
                cluster: KUBECONFIG_NAME.to_owned(),
                user: Some(KUBECONFIG_NAME.to_owned()),
                namespace: Some(namespace.to_owned()),
                ..kube::config::Context::default()
            }),
            ..NamedContext::default()
        }],
        current_context: Some(KUBECONFIG_NAME.to_owned()),
        ..Kubeconfig::default()
    }
}

fn labels(deployment: &str, color: Color) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/managed-by", "bluegreen"),
        (LABEL_DEPLOYMENT, deployment),
        (LABEL_COLOR, color.suffix()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

fn home_metadata(
    deployment: &str,
    color: Color,
    namespace: &str,
    owner: OwnerReference,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(service_account_name(deployment, color)),
        namespace: Some(namespace.to_owned()),
        labels: Some(labels(deployment, color)),
        owner_references: Some(vec![owner]),
        ..ObjectMeta::default()
    }
}

/// The home ServiceAccount of the remote gates of `deployment`'s `color`, owned by the resource.
pub fn service_account(
    namespace: &str,
    deployment: &str,
    color: Color,
    owner: OwnerReference,
) -> ServiceAccount {
    ServiceAccount {
        metadata: home_metadata(deployment, color, namespace, owner),
        automount_service_account_token: Some(false),
        ..ServiceAccount::default()
    }
}

/// The RoleBinding of that ServiceAccount to the gates' Role.
pub fn role_binding(
    namespace: &str,
    deployment: &str,
    color: Color,
    owner: OwnerReference,
) -> RoleBinding {
    RoleBinding {
        metadata: home_metadata(deployment, color, namespace, owner),
        role_ref: RoleRef {
            api_group: Some(RBAC_GROUP.to_owned()),
            kind: "Role".to_owned(),
            name: gate_rbac::role_name(deployment),
        },
        subjects: Some(vec![Subject {
            api_group: None,
            kind: "ServiceAccount".to_owned(),
            name: service_account_name(deployment, color),
            namespace: Some(namespace.to_owned()),
        }]),
    }
}

/// The Secret of the remote gates of `deployment`'s `color` in `remote_namespace`: `kubeconfig`
/// and `token`, the token's expiry annotated, no owner reference (its owner is in another
/// cluster).
pub fn secret(
    remote_namespace: &str,
    deployment: &str,
    color: Color,
    kubeconfig: &Kubeconfig,
    token: &str,
    expires: &str,
) -> Result<Secret> {
    let kubeconfig = serde_json::to_vec_pretty(kubeconfig)?;
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(deployment, color)),
            namespace: Some(remote_namespace.to_owned()),
            labels: Some(labels(deployment, color)),
            annotations: Some([(TOKEN_EXPIRES_ANNOTATION.to_owned(), expires.to_owned())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(
            [
                (KUBECONFIG_KEY.to_owned(), ByteString(kubeconfig)),
                (TOKEN_KEY.to_owned(), ByteString(token.as_bytes().to_vec())),
            ]
            .into(),
        ),
        ..Secret::default()
    })
}

/// Whether the token of a Secret annotated to expire at `expires` (absent or unreadable: unknown)
/// is to be replaced at `now`: less than `tokens.rotate_below` of it is left.
pub fn rotation_due(expires: Option<&str>, now: jiff::Timestamp, tokens: GateTokens) -> bool {
    let Some(expires) = expires.and_then(|e| e.parse::<jiff::Timestamp>().ok()) else {
        return true;
    };
    let left = expires.duration_since(now);
    Duration::try_from(left).map_or(true, |left| left < tokens.rotate_below)
}

/// The remote children whose credential is to be removed when the status goes from `before` to
/// `after`: each color recorded in another cluster before and no longer there after (its child
/// is gone, so the plan forgets its cluster).
pub fn gone(before: &ChildClusters, after: &ChildClusters) -> Vec<(Color, TargetCluster)> {
    Color::ALL
        .iter()
        .filter_map(|&color| {
            let was = before.of(color)?;
            (after.of(color) != Some(was)).then(|| (color, was.clone()))
        })
        .collect()
}

/// Makes sure the remote gates of `fbgd`'s child of `color` in `cluster` (reached by `reach`)
/// have their credential: the gates' Role, the ServiceAccount and its RoleBinding in the home
/// namespace `namespace` (applied every time: this runs before the child is applied), and the
/// Secret in the remote namespace, written unless it is current (the same kubeconfig, a token not
/// due for rotation). Repeats harmlessly.
pub async fn ensure(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
    color: Color,
    cluster: &TargetCluster,
    reach: &Reach,
) -> Result<()> {
    let config = kubeconfig(
        home_server(cluster, &ctx.home_api)?,
        ctx.home_api.ca_pem.as_deref(),
        namespace,
    );
    apply_account(ctx, fbgd, namespace, color).await?;
    if !current(ctx, &fbgd.name_any(), color, &config, reach).await? {
        write_token(ctx, fbgd, namespace, color, &config, reach).await?;
    }
    Ok(())
}

/// Server-side applies the gates' Role, and the ServiceAccount and RoleBinding of the remote
/// gates of `fbgd`'s `color`, in the home namespace `namespace`.
async fn apply_account(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
    color: Color,
) -> Result<()> {
    let name = fbgd.name_any();
    let owner = apply_gate_role(ctx, fbgd, namespace).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let account = service_account_name(&name, color);
    let sa = service_account(namespace, &name, color, owner.clone());
    Api::<ServiceAccount>::namespaced(ctx.client.clone(), namespace)
        .patch(&account, &params, &Patch::Apply(&sa))
        .await?;
    let binding = role_binding(namespace, &name, color, owner);
    Api::<RoleBinding>::namespaced(ctx.client.clone(), namespace)
        .patch(&account, &params, &Patch::Apply(&binding))
        .await?;
    Ok(())
}

/// Issues a token of the remote gates' ServiceAccount (TokenRequest) and writes it, with the
/// kubeconfig `config`, into their Secret in the cluster `reach` reaches.
async fn write_token(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
    color: Color,
    config: &Kubeconfig,
    reach: &Reach,
) -> Result<()> {
    let name = fbgd.name_any();
    let account = service_account_name(&name, color);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(
                i64::try_from(ctx.gate_tokens.ttl.as_secs()).unwrap_or(i64::MAX),
            ),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let issued = Api::<ServiceAccount>::namespaced(ctx.client.clone(), namespace)
        .create_token_request(&account, &PostParams::default(), &request)
        .await?;
    let (Some(token), Some(expires)) = issued
        .status
        .map_or((None, None), |s| (s.token, s.expiration_timestamp))
    else {
        return Err(Error::TokenRequest {
            service_account: format!("{namespace}/{account}"),
        });
    };
    let expires = expires.0.to_string();
    let secret_name = secret_name(&name, color);
    let body = secret(&reach.namespace, &name, color, config, &token, &expires)?;
    Api::<Secret>::namespaced(reach.client.clone(), &reach.namespace)
        .patch(
            &secret_name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await?;
    tracing::info!(deployment = %name, %color, secret = %secret_name, %expires, "remote gates' token written");
    Ok(())
}

/// Whether the Secret of the remote gates of `deployment`'s `color` exists in the cluster `reach`
/// reaches with the kubeconfig `config` and a token not yet due for rotation ([`rotation_due`]).
async fn current(
    ctx: &Context,
    deployment: &str,
    color: Color,
    config: &Kubeconfig,
    reach: &Reach,
) -> Result<bool> {
    let secrets: Api<Secret> = Api::namespaced(reach.client.clone(), &reach.namespace);
    let Some(existing) = secrets.get_opt(&secret_name(deployment, color)).await? else {
        return Ok(false);
    };
    let same_config = existing
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_KEY))
        .is_some_and(|k| k.0 == serde_json::to_vec_pretty(config).unwrap_or_default());
    let expires = existing.annotations().get(TOKEN_EXPIRES_ANNOTATION);
    Ok(same_config
        && !rotation_due(
            expires.map(String::as_str),
            jiff::Timestamp::now(),
            ctx.gate_tokens,
        ))
}

/// Removes the credential of the remote gates of `fbgd`'s child of `color` (whose cluster
/// `reach` reaches): the Secret there first, then the RoleBinding and the ServiceAccount in the
/// home namespace `namespace` (a crash in between leaves what the next reconcile removes).
pub async fn remove(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    namespace: &str,
    color: Color,
    reach: &Reach,
) -> Result<()> {
    let name = fbgd.name_any();
    let secrets: Api<Secret> = Api::namespaced(reach.client.clone(), &reach.namespace);
    delete_if_present(&secrets, &secret_name(&name, color)).await?;
    let account = service_account_name(&name, color);
    delete_if_present(
        &Api::<RoleBinding>::namespaced(ctx.client.clone(), namespace),
        &account,
    )
    .await?;
    delete_if_present(
        &Api::<ServiceAccount>::namespaced(ctx.client.clone(), namespace),
        &account,
    )
    .await
}

/// Before a plan's status (`after`) is written: removes the credential of every remote child
/// the plan forgets ([`gone`]), in the cluster `fbgd`'s status recorded; a cluster this reconcile
/// did not resolve is `Error::ClusterUnresolved`, retried (the plan forgets no child there while
/// it cannot be used: nothing is decided then).
pub async fn forget_gone(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    reaches: &Reaches,
    after: &ChildClusters,
) -> Result<()> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let before = fbgd.status.clone().unwrap_or_default().clusters;
    for (color, cluster) in gone(&before, after) {
        let reach = reaches
            .get(Some(&cluster))
            .ok_or(Error::ClusterUnresolved(color))?;
        remove(ctx, fbgd, &namespace, color, reach).await?;
    }
    Ok(())
}

/// After a plan ran: for each child the status records in another cluster (`clusters`) and the
/// observation saw up (not being deleted), reads its gates' Secret there and, unless it is
/// current, writes the credential again (as [`ensure`] does): a token due for rotation, a changed
/// home API server, a Secret deleted by hand. One read per child while nothing is due.
pub async fn refresh(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    reaches: &Reaches,
    observed: &Observed,
    clusters: &ChildClusters,
) -> Result<()> {
    let namespace = fbgd
        .namespace()
        .ok_or(Error::MissingMetadata("namespace"))?;
    let name = fbgd.name_any();
    for &color in Color::ALL {
        let Some(cluster) = clusters.of(color) else {
            continue;
        };
        if observed.child(color).is_none_or(|c| c.deleting) {
            continue;
        }
        let Some(reach) = reaches.get(Some(cluster)) else {
            continue;
        };
        let config = kubeconfig(
            home_server(cluster, &ctx.home_api)?,
            ctx.home_api.ca_pem.as_deref(),
            &namespace,
        );
        if !current(ctx, &name, color, &config, reach).await? {
            apply_account(ctx, fbgd, &namespace, color).await?;
            write_token(ctx, fbgd, &namespace, color, &config, reach).await?;
        }
    }
    Ok(())
}

/// On deletion, once the plan ran: removes the credential of every child `fbgd`'s status records
/// in another cluster (the children are deleted or orphaned; the home ServiceAccount is owned by
/// the resource and would go with it anyway).
pub async fn remove_all(
    ctx: &Context,
    fbgd: &FlinkBlueGreenDeployment,
    reaches: &Reaches,
) -> Result<()> {
    forget_gone(ctx, fbgd, reaches, &ChildClusters::default()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::KubeconfigSecret;

    fn east(home: Option<&str>) -> TargetCluster {
        TargetCluster {
            kubeconfig_secret: KubeconfigSecret {
                name: "east".into(),
                key: "kubeconfig".into(),
            },
            namespace: Some("jobs".into()),
            flink_rest_url: "https://{name}.east".into(),
            home_api_server: home.map(str::to_owned),
        }
    }

    #[test]
    fn the_kubeconfig_reads_the_token_file_next_to_it_in_the_home_namespace() {
        let config = kubeconfig("https://api.home:6443", Some(b"PEM"), "prod");
        let json = serde_json::to_value(&config).expect("serialises");
        assert_eq!(
            json["clusters"][0]["cluster"]["server"],
            "https://api.home:6443"
        );
        assert_eq!(
            json["clusters"][0]["cluster"]["certificate-authority-data"], "UEVN",
            "base64 of the PEM"
        );
        assert_eq!(
            json["users"][0]["user"],
            serde_json::json!({"tokenFile": "token"})
        );
        assert_eq!(json["contexts"][0]["context"]["namespace"], "prod");
        assert_eq!(json["current-context"], "bluegreen-home");
        let without_ca = serde_json::to_value(kubeconfig("http://h", None, "prod")).expect("json");
        assert!(
            without_ca["clusters"][0]["cluster"]
                .get("certificate-authority-data")
                .is_none()
        );
        // It reads back as kube-rs and kubectl read it.
        let text = serde_json::to_string(&config).expect("json");
        let read = Kubeconfig::from_yaml(&text).expect("a kubeconfig");
        assert_eq!(
            read.auth_infos[0]
                .auth_info
                .as_ref()
                .and_then(|a| a.token_file.as_deref()),
            Some("token")
        );
    }

    #[test]
    fn the_secret_holds_both_keys_and_the_expiry_and_has_no_owner() {
        let config = kubeconfig("https://api.home:6443", None, "prod");
        let s = secret(
            "jobs",
            "orders",
            Color::Green,
            &config,
            "t0k",
            "2030-01-01T00:00:00Z",
        )
        .expect("a Secret");
        assert_eq!(
            s.metadata.name.as_deref(),
            Some("orders-green-bluegreen-home")
        );
        assert_eq!(s.metadata.namespace.as_deref(), Some("jobs"));
        assert_eq!(s.metadata.owner_references, None);
        assert_eq!(s.type_.as_deref(), Some("Opaque"));
        let data = s.data.expect("data");
        assert_eq!(data.keys().collect::<Vec<_>>(), ["kubeconfig", "token"]);
        assert_eq!(data["token"].0, b"t0k");
        assert_eq!(
            s.metadata.annotations.expect("annotations")[TOKEN_EXPIRES_ANNOTATION],
            "2030-01-01T00:00:00Z"
        );
        let labels = s.metadata.labels.expect("labels");
        assert_eq!(labels[LABEL_DEPLOYMENT], "orders");
        assert_eq!(labels[LABEL_COLOR], "green");
    }

    #[test]
    fn the_account_is_bound_to_the_gates_role_only() {
        let owner = OwnerReference {
            api_version: "bluegreen.dev/v1alpha1".into(),
            kind: "FlinkBlueGreenDeployment".into(),
            name: "orders".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: None,
        };
        let sa = service_account("prod", "orders", Color::Blue, owner.clone());
        assert_eq!(
            sa.metadata.name.as_deref(),
            Some("orders-blue-bluegreen-remote-gate")
        );
        assert_eq!(sa.metadata.owner_references, Some(vec![owner.clone()]));
        let rb = role_binding("prod", "orders", Color::Blue, owner);
        assert_eq!(rb.metadata.name, sa.metadata.name);
        assert_eq!(rb.role_ref.kind, "Role");
        assert_eq!(rb.role_ref.name, "orders-bluegreen-gate");
        let subjects = rb.subjects.expect("subjects");
        assert_eq!(subjects.len(), 1);
        assert_eq!(subjects[0].name, "orders-blue-bluegreen-remote-gate");
        assert_eq!(subjects[0].namespace.as_deref(), Some("prod"));
    }

    #[test]
    fn a_token_is_replaced_with_less_than_the_threshold_left() {
        let tokens = GateTokens::default();
        let now: jiff::Timestamp = "2030-01-01T00:00:00Z".parse().expect("time");
        let due = |expires: Option<&str>| rotation_due(expires, now, tokens);
        assert!(!due(Some("2030-01-01T01:00:00Z")), "fresh: an hour left");
        assert!(!due(Some("2030-01-01T00:30:01Z")), "just over half left");
        assert!(due(Some("2030-01-01T00:29:59Z")), "less than half left");
        assert!(due(Some("2029-12-31T23:00:00Z")), "expired");
        assert!(due(None), "unknown expiry");
        assert!(due(Some("tomorrow")), "unreadable expiry");
    }

    #[test]
    fn the_home_api_server_is_the_resources_else_the_controllers_else_refused() {
        let flag = HomeApi {
            server: Some("https://flag".into()),
            ca_pem: None,
        };
        assert_eq!(
            home_server(&east(Some("https://own")), &flag),
            Ok("https://own")
        );
        assert_eq!(home_server(&east(None), &flag), Ok("https://flag"));
        let refused = home_server(&east(None), &HomeApi::default()).expect_err("neither");
        assert_eq!(refused.field, HOME_API_FIELD);
        assert!(refused.message.contains("--home-api-server"), "{refused}");
    }

    #[test]
    fn a_credential_is_removed_once_its_child_is_forgotten() {
        let mut before = ChildClusters::default();
        before.set(Color::Green, Some(Box::new(east(None))));
        // Still recorded (the child runs, or is being created): kept.
        assert_eq!(gone(&before, &before), []);
        // Forgotten (the child is gone): removed, in the cluster it ran in.
        assert_eq!(
            gone(&before, &ChildClusters::default()),
            [(Color::Green, east(None))]
        );
        // Recorded elsewhere now: the old one goes.
        let mut after = ChildClusters::default();
        after.set(Color::Green, Some(Box::new(east(Some("https://other")))));
        assert_eq!(gone(&before, &after), [(Color::Green, east(None))]);
        // A child in this cluster has none.
        assert_eq!(gone(&ChildClusters::default(), &before), []);
    }
}
