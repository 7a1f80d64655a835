//! The clusters the children run in: this one, or another named by `spec.cluster` through a
//! kubeconfig kept in a Secret. A client per target cluster, built from the Secret's kubeconfig
//! and kept until the Secret changes; at every observation the Secret is read and the cluster
//! asked for FlinkDeployments, so a missing Secret, an unusable kubeconfig, an unreachable
//! cluster or one without the Apache operator's CRD is refused before anything is touched
//! (I/O).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bluegreen_protocol::Color;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::context::flink_deployment_resource;
use crate::error::SpecError;
use crate::observed::ClusterDown;
use crate::resource::{ChildClusters, TargetCluster};

/// How long connecting to a target cluster's API server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a call to a target cluster's API server may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(8);

/// How the controller reaches one cluster's children.
#[derive(Clone)]
pub struct Reach {
    /// The client of that cluster's API server.
    pub client: kube::Client,
    /// The children's namespace there.
    pub namespace: String,
    /// Flink's REST URL template there, with `{name}` and `{namespace}`.
    pub rest_url_template: String,
    /// Another cluster than the resource's: its children carry no owner reference.
    pub remote: bool,
}

/// Every cluster one reconcile may touch: this one, `spec.cluster` and where each child runs.
pub struct Reaches {
    home: Reach,
    remote: Vec<(TargetCluster, Reach)>,
}

impl Reaches {
    /// The reach of `cluster` (`None`: this cluster), if it was resolved.
    pub fn get(&self, cluster: Option<&TargetCluster>) -> Option<&Reach> {
        match cluster {
            None => Some(&self.home),
            Some(target) => self
                .remote
                .iter()
                .find(|(t, _)| t == target)
                .map(|(_, r)| r),
        }
    }
}

/// What resolving the clusters found unusable.
#[derive(Debug, Default)]
pub struct Unusable {
    /// The clusters children run in (`status.clusters`) that cannot be used now: those
    /// children are not looked for.
    pub running: Option<ClusterDown>,
    /// `spec.cluster` names a cluster that cannot be used: the spec is refused.
    pub target: Option<SpecError>,
}

/// Why a target cluster cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The Secret does not exist.
    #[error(
        "Secret {0:?} does not exist in this namespace: create it with the target cluster's kubeconfig"
    )]
    SecretMissing(String),
    /// The controller may not read the Secret.
    #[error(
        "Secret {secret:?} cannot be read ({message}): bind the ClusterRole bluegreen-controller-kubeconfig-secrets to the controller in this namespace (docs/operations.md)"
    )]
    SecretUnreadable {
        /// The Secret.
        secret: String,
        /// The API server's answer.
        message: String,
    },
    /// The Secret lacks the key.
    #[error(
        "Secret {secret:?} has no key {key:?} (it has {keys}): put the kubeconfig under that key"
    )]
    KeyMissing {
        /// The Secret.
        secret: String,
        /// The key looked for.
        key: String,
        /// The keys it has.
        keys: String,
    },
    /// The kubeconfig cannot be used.
    #[error("the kubeconfig in Secret {secret:?} cannot be used: {message}")]
    Kubeconfig {
        /// The Secret.
        secret: String,
        /// Why.
        message: String,
    },
    /// The cluster does not answer.
    #[error("the cluster at {server} is not reachable: {message}")]
    Unreachable {
        /// Its API server.
        server: String,
        /// The client's error.
        message: String,
    },
    /// The cluster does not serve FlinkDeployments.
    #[error(
        "the cluster at {server} does not serve FlinkDeployment (flink.apache.org/v1beta1): install the Apache Flink Kubernetes Operator there"
    )]
    CrdMissing {
        /// Its API server.
        server: String,
    },
    /// The kubeconfig's user may not list FlinkDeployments there.
    #[error(
        "the cluster at {server} refuses to list FlinkDeployments in namespace {namespace:?} ({message}): grant the kubeconfig's user get, list, create, patch and delete on flinkdeployments there"
    )]
    Forbidden {
        /// Its API server.
        server: String,
        /// The target namespace.
        namespace: String,
        /// The API server's answer.
        message: String,
    },
}

/// A cached client: the Secret's resourceVersion it was built from, its server, the client.
type Cached = (String, String, kube::Client);

/// Where a kubeconfig is kept: namespace, Secret, key.
type SecretKey = (String, String, String);

/// The clients of target clusters, by (namespace, Secret, key); rebuilt when the Secret changes.
#[derive(Clone, Default)]
pub struct ClusterClients {
    cache: Arc<Mutex<HashMap<SecretKey, Cached>>>,
}

impl ClusterClients {
    /// Resolves this cluster (`home`, reaching Flink through `rest_url_template`), every
    /// cluster a child runs in (`children`) and the one the next deployment goes to
    /// (`spec_cluster`) for a resource in `namespace`: every cluster that can be used, and what
    /// cannot.
    pub async fn resolve(
        &self,
        home: &kube::Client,
        rest_url_template: &str,
        namespace: &str,
        spec_cluster: Option<&TargetCluster>,
        children: &ChildClusters,
    ) -> (Reaches, Unusable) {
        let mut reaches = Reaches {
            home: Reach {
                client: home.clone(),
                namespace: namespace.to_owned(),
                rest_url_template: rest_url_template.to_owned(),
                remote: false,
            },
            remote: Vec::new(),
        };
        let mut unusable = Unusable::default();
        for color in [Color::Blue, Color::Green] {
            let Some(target) = children.of(color) else {
                continue;
            };
            if reaches.get(Some(target)).is_some() {
                continue;
            }
            match self.reach(home, namespace, target).await {
                Ok(reach) => reaches.remote.push((target.clone(), reach)),
                Err(e) => {
                    let down = unusable.running.get_or_insert_with(|| ClusterDown {
                        colors: Vec::new(),
                        why: format!(
                            "the cluster the {color} job runs in (status.clusters.{}) cannot be used: {e}",
                            color.suffix()
                        ),
                    });
                    down.colors.push(color);
                }
            }
        }
        if let Some(target) = spec_cluster
            && reaches.get(Some(target)).is_none()
            && unusable.running.is_none()
        {
            match self.reach(home, namespace, target).await {
                Ok(reach) => reaches.remote.push((target.clone(), reach)),
                Err(e) => {
                    unusable.target = Some(SpecError::new(
                        "spec.cluster",
                        format!("names a cluster that cannot be used: {e}"),
                    ));
                }
            }
        }
        (reaches, unusable)
    }

    /// The reach of `target` for a resource in `namespace`: its client (cached while the
    /// Secret is unchanged), checked to serve FlinkDeployments in the target namespace.
    async fn reach(
        &self,
        home: &kube::Client,
        namespace: &str,
        target: &TargetCluster,
    ) -> Result<Reach, ClusterError> {
        let secret_ref = &target.kubeconfig_secret;
        let secrets: Api<Secret> = Api::namespaced(home.clone(), namespace);
        let secret = match secrets.get_opt(&secret_ref.name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => return Err(ClusterError::SecretMissing(secret_ref.name.clone())),
            Err(e) => {
                return Err(ClusterError::SecretUnreadable {
                    secret: secret_ref.name.clone(),
                    message: e.to_string(),
                });
            }
        };
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        let key = (
            namespace.to_owned(),
            secret_ref.name.clone(),
            secret_ref.key.clone(),
        );
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .filter(|(v, _, _)| *v == version)
            .map(|(_, server, client)| (server.clone(), client.clone()));
        let (server, client) = if let Some(found) = cached {
            found
        } else {
            let built = client_from_secret(&secret, &secret_ref.name, &secret_ref.key).await?;
            self.cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, (version, built.0.clone(), built.1.clone()));
            built
        };
        let target_namespace = target.namespace.as_deref().unwrap_or(namespace);
        let children: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            target_namespace,
            &flink_deployment_resource(),
        );
        match children.list(&ListParams::default().limit(1)).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                return Err(ClusterError::CrdMissing { server });
            }
            Err(kube::Error::Api(status)) if status.is_forbidden() || status.code == 401 => {
                return Err(ClusterError::Forbidden {
                    server,
                    namespace: target_namespace.to_owned(),
                    message: status.message.clone(),
                });
            }
            Err(e) => {
                return Err(ClusterError::Unreachable {
                    server,
                    message: e.to_string(),
                });
            }
        }
        Ok(Reach {
            client,
            namespace: target_namespace.to_owned(),
            rest_url_template: target.flink_rest_url.clone(),
            remote: true,
        })
    }
}

/// A client of the cluster the kubeconfig under `key` of `secret` names, and its server.
async fn client_from_secret(
    secret: &Secret,
    name: &str,
    key: &str,
) -> Result<(String, kube::Client), ClusterError> {
    let unusable = |message: String| ClusterError::Kubeconfig {
        secret: name.to_owned(),
        message,
    };
    let data = secret.data.clone().unwrap_or_default();
    let Some(bytes) = data.get(key) else {
        let keys: Vec<&str> = data.keys().map(String::as_str).collect();
        return Err(ClusterError::KeyMissing {
            secret: name.to_owned(),
            key: key.to_owned(),
            keys: if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            },
        });
    };
    let text = std::str::from_utf8(&bytes.0).map_err(|e| unusable(format!("not UTF-8 ({e})")))?;
    let kubeconfig = Kubeconfig::from_yaml(text).map_err(|e| unusable(e.to_string()))?;
    if let Some(what) = runs_or_reads(&kubeconfig) {
        return Err(unusable(format!(
            "it uses {what}, which would run a program or read a file on the controller's host; only inline credentials are accepted (token, client-certificate-data, certificate-authority-data)"
        )));
    }
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .map_err(|e| unusable(e.to_string()))?;
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.read_timeout = Some(CALL_TIMEOUT);
    config.write_timeout = Some(CALL_TIMEOUT);
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).map_err(|e| unusable(e.to_string()))?;
    Ok((server, client))
}

/// The first field of `kubeconfig` that would make the controller run a program or read one
/// of its own files (its service account's token, say) on behalf of whoever wrote the Secret.
fn runs_or_reads(kubeconfig: &Kubeconfig) -> Option<&'static str> {
    let users = kubeconfig
        .auth_infos
        .iter()
        .filter_map(|u| u.auth_info.as_ref());
    for user in users {
        let found = [
            (user.exec.is_some(), "users[].user.exec"),
            (user.auth_provider.is_some(), "users[].user.auth-provider"),
            (user.token_file.is_some(), "users[].user.tokenFile"),
            (
                user.client_certificate.is_some(),
                "users[].user.client-certificate",
            ),
            (user.client_key.is_some(), "users[].user.client-key"),
        ];
        if let Some((_, what)) = found.into_iter().find(|(set, _)| *set) {
            return Some(what);
        }
    }
    kubeconfig
        .clusters
        .iter()
        .filter_map(|c| c.cluster.as_ref())
        .find(|c| c.certificate_authority.is_some())
        .map(|_| "clusters[].cluster.certificate-authority")
}

#[cfg(test)]
mod tests {
    use super::runs_or_reads;
    use kube::config::Kubeconfig;

    fn kubeconfig(user: &str, cluster: &str) -> Kubeconfig {
        Kubeconfig::from_yaml(&format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://east:6443\n{cluster}\nusers:\n- name: u\n  user:\n{user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
        ))
        .expect("a kubeconfig")
    }

    #[test]
    fn a_kubeconfig_that_would_run_a_program_or_read_a_local_file_is_refused() {
        assert_eq!(runs_or_reads(&kubeconfig("    token: abc", "")), None);
        assert_eq!(
            runs_or_reads(&kubeconfig(
                "    exec: {apiVersion: client.authentication.k8s.io/v1, command: sh}",
                ""
            )),
            Some("users[].user.exec")
        );
        assert_eq!(
            runs_or_reads(&kubeconfig(
                "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token",
                ""
            )),
            Some("users[].user.tokenFile")
        );
        assert_eq!(
            runs_or_reads(&kubeconfig(
                "    token: abc",
                "    certificate-authority: /etc/ca.crt"
            )),
            Some("clusters[].cluster.certificate-authority")
        );
    }
}
