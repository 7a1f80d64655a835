//! Secrets and tokens never appear in logs: one whole handover with authentication and RBAC on
//! (the controller as its own ServiceAccount, as in `least_privilege.rs`), with every tracing
//! line of the process captured — the controller, kube's client and runtime, the lease manager,
//! the API server with its request log on, the runner and the gates (the sidecars' part in the
//! simulation) at `trace`, everything else at `debug` — plus a TokenRequest over HTTP, requests
//! with a revoked token and a Secret written and read; no token and no Secret value is in the
//! output.

mod rbac_bed;

use std::time::Duration;

use bluegreen_examples::reliability::{Trial, record};
use k8s_openapi::ByteString;
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use rbac_bed::{
    Bed, INSTALL_NAMESPACE, NAMESPACE, Step, capture_logs, captured_logs, install_objects,
};
use serde_json::json;

const LOG_FILTER: &str = "debug,bluegreen_controller=trace,bluegreen_local_apiserver=trace,\
    bluegreen_local_flink=trace,bluegreen_gate=trace,kube_client=trace,kube_runtime=trace,\
    kube_lease_manager=trace,secrets_in_logs=trace,hyper=debug,hyper_util=debug,h2=info,tower=debug";

/// A line this test logs itself, to show that the capture works.
const CANARY: &str = "capture-canary-5d2b";

/// A value no log has any reason to contain.
const SECRET_VALUE: &str = "bluegreen-secret-value-7c1e9f0a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, step by step")]
async fn no_token_or_secret_value_appears_in_any_log() -> anyhow::Result<()> {
    capture_logs(LOG_FILTER);
    let bed = Bed::start(INSTALL_NAMESPACE, &install_objects(INSTALL_NAMESPACE), true).await?;
    let mut tokens: Vec<String> = bed.tokens.iter().map(|t| t.expose().to_owned()).collect();
    let admin_kubeconfig = bed.server.kubeconfig_yaml();
    let admin_token = admin_kubeconfig
        .split("token: ")
        .nth(1)
        .and_then(|rest| rest.split('}').next())
        .expect("the administrator's kubeconfig carries a token");
    tokens.push(admin_token.to_owned());

    // A Secret written and read by the administrator.
    let secrets: Api<Secret> = Api::namespaced(bed.admin.clone(), NAMESPACE);
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "db", "namespace": NAMESPACE}}))?;
    let secret = Secret {
        data: Some(
            [(
                "password".to_owned(),
                ByteString(SECRET_VALUE.as_bytes().to_vec()),
            )]
            .into(),
        ),
        ..secret
    };
    secrets.create(&PostParams::default(), &secret).await?;
    secrets.get("db").await?;

    // A token requested over HTTP, and a revoked one used (401).
    let sas: Api<ServiceAccount> = Api::namespaced(bed.admin.clone(), NAMESPACE);
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "temporary"}}))?,
    )
    .await?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let requested = sas
        .create_token_request("temporary", &PostParams::default(), &request)
        .await?
        .status
        .and_then(|s| s.token)
        .expect("a token");
    tokens.push(requested.clone());
    let mut config = bed.server.config();
    config.auth_info = serde_json::from_value(json!({"token": requested}))?;
    let temporary = kube::Client::try_from(config)?;
    temporary.apiserver_version().await?;
    sas.delete("temporary", &DeleteParams::default()).await?;
    assert!(
        temporary.apiserver_version().await.is_err(),
        "a revoked token is refused"
    );
    let own: Api<ServiceAccount> = Api::namespaced(bed.ctx.client.clone(), "kube-system");
    assert!(
        own.list(&ListParams::default()).await.is_err(),
        "the controller may not list ServiceAccounts (a 403 is logged)"
    );

    bed.run(Step::Deploy, Duration::from_mins(1)).await?;
    bed.run(Step::HandOver, Duration::from_mins(1)).await?;
    bed.run(Step::Delete, Duration::from_mins(1)).await?;
    bed.shutdown().await;

    // The capture would see a leak at the most verbose level kube's client logs at.
    tracing::trace!(target: "kube_client", "canary {}", CANARY);
    let logs = captured_logs();
    assert!(
        logs.contains(CANARY),
        "the capture misses kube_client's trace lines"
    );
    // The capture saw the parts that handle credentials.
    for expected in [
        "request",                          // the API server's request log
        "unauthenticated request",          // the revoked token's 401
        "request refused",                  // the controller's 403
        "executing",                        // the controller's actions
        "leading: starting the controller", // leader election
    ] {
        assert!(logs.contains(expected), "no {expected:?} line was captured");
    }
    let base64 = base64_encode(SECRET_VALUE.as_bytes());
    for (what, needle) in tokens.iter().map(|t| ("a token", t.as_str())).chain([
        ("the Secret's value", SECRET_VALUE),
        ("the Secret's value (base64)", base64.as_str()),
    ]) {
        assert!(
            !logs.contains(needle),
            "{what} appears in the logs:\n{}",
            logs.lines()
                .filter(|l| l.contains(needle))
                .take(5)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    println!(
        "{} log lines ({} bytes) captured; none contains any of {} tokens or the Secret's value",
        logs.lines().count(),
        logs.len(),
        tokens.len()
    );
    record_trial(logs.lines().count())?;
    Ok(())
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The row of docs/reliability.md this test makes.
fn record_trial(lines: usize) -> std::io::Result<()> {
    record(&Trial {
        area: "Least privilege".into(),
        fault: "tokens (administrator, controller, requested, revoked) and a Secret handled during a handover, every log line captured".into(),
        runs: 1,
        outcome: "no token and no Secret value (plain or base64) in any log line".into(),
        duplicates: None,
        losses: None,
        figures: format!("{lines} log lines"),
        test: "secrets_in_logs::no_token_or_secret_value_appears_in_any_log".into(),
    })
}
