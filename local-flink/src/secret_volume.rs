//! A container's kubeconfig in a Secret volume, as a kubelet would give it to a pod: which
//! Secret a pod template mounts where a container's `KUBECONFIG` points
//! ([`kubeconfig_mount`]), and the Secret's keys written as files into a directory
//! ([`materialize`]). Both runners use it for the gates of a child in another cluster: the
//! controller injects the Secret `<child>-bluegreen-home` (a kubeconfig for the home API server
//! with `tokenFile: token`) into the TaskManager pod template (docs/operations.md, "Moving a job
//! to another cluster").

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{Container, PodSpec, Secret};
use kube::Api;
use serde_json::Value;

use crate::Error;

/// The injected sidecar container the gates of a TaskManager talk to.
pub const SIDECAR_CONTAINER: &str = "bluegreen-sidecar";
/// The environment variable that names a kubeconfig file.
pub const KUBECONFIG_ENV: &str = "KUBECONFIG";

/// A Secret volume holding a file a container's environment variable names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMount {
    /// The Secret (in the pod's namespace).
    pub secret: String,
    /// Where the volume is mounted in the container (`/etc/bluegreen/home`).
    pub dir: String,
    /// The file the variable names, relative to `dir` (`kubeconfig`): a key of the Secret.
    pub file: String,
}

/// The Secret volume under the `bluegreen-sidecar` container's `KUBECONFIG` in `pod_spec` (a pod
/// template's `spec`: `containers`, `volumes`); `None` when that container, the variable, a
/// mount that holds the file or a Secret volume of that mount is missing.
pub fn kubeconfig_mount(pod_spec: &Value) -> Option<SecretMount> {
    env_file_mount(pod_spec, SIDECAR_CONTAINER, KUBECONFIG_ENV)
}

/// The Secret volume that holds the file container `container`'s environment variable `env`
/// names in `pod_spec` (see [`kubeconfig_mount`]): the mount whose path is the deepest directory
/// above the file, and the volume of that mount when it is a Secret.
pub fn env_file_mount(pod_spec: &Value, container: &str, env: &str) -> Option<SecretMount> {
    let spec: PodSpec = serde_json::from_value(pod_spec.clone()).ok()?;
    let c: &Container = spec.containers.iter().find(|c| c.name == container)?;
    let path = c
        .env
        .iter()
        .flatten()
        .find(|e| e.name == env)?
        .value
        .clone()?;
    let (dir, file, volume) = c
        .volume_mounts
        .iter()
        .flatten()
        .filter_map(|m| {
            let dir = m.mount_path.trim_end_matches('/');
            let file = path.strip_prefix(dir)?.strip_prefix('/')?;
            (!file.is_empty()).then(|| (dir.to_owned(), file.to_owned(), m.name.clone()))
        })
        .max_by_key(|(dir, _, _)| dir.len())?;
    let secret = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == volume)?
        .secret
        .as_ref()?
        .secret_name
        .clone()?;
    Some(SecretMount { secret, dir, file })
}

/// Writes every key of the Secret `mount.secret` in `namespace` (read through `client`) as a
/// file of that name into `dir` (created if missing; each file replaced atomically, mode 0600 on
/// Unix), as a kubelet fills a Secret volume. A missing Secret is [`Error::SecretVolume`]: the
/// pod would not start (`ContainerCreating`) until it exists.
pub async fn materialize(
    client: &kube::Client,
    namespace: &str,
    mount: &SecretMount,
    dir: &Path,
) -> Result<(), Error> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let missing = |reason: String| Error::SecretVolume {
        namespace: namespace.to_owned(),
        secret: mount.secret.clone(),
        reason,
    };
    let secret = secrets
        .get_opt(&mount.secret)
        .await?
        .ok_or_else(|| missing("it does not exist".to_owned()))?;
    let mut files: BTreeMap<String, Vec<u8>> = secret
        .data
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    for (k, v) in secret.string_data.unwrap_or_default() {
        files.insert(k, v.into_bytes());
    }
    if !files.contains_key(&mount.file) {
        return Err(missing(format!("it has no key {:?}", mount.file)));
    }
    let io = |what: &'static str, path: &Path| {
        let path = path.display().to_string();
        move |source| Error::Io { what, path, source }
    };
    std::fs::create_dir_all(dir).map_err(io("creating the Secret volume directory", dir))?;
    for (key, bytes) in files {
        if key.contains('/') || key.starts_with('.') {
            return Err(missing(format!(
                "its key {key:?} is not a file name (a kubelet refuses it too)"
            )));
        }
        let target = dir.join(&key);
        let tmp = dir.join(format!(".{key}.tmp"));
        write_private(&tmp, &bytes).map_err(io("writing a Secret volume file", &tmp))?;
        std::fs::rename(&tmp, &target).map_err(io("replacing a Secret volume file", &target))?;
    }
    Ok(())
}

/// Writes `bytes` to `path`, readable by the owner only (on Unix).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(sidecar_env: &str, mount_path: &str, volume: &Value) -> Value {
        json!({
            "containers": [
                {"name": "flink-main-container"},
                {
                    "name": "bluegreen-sidecar",
                    "env": [{"name": "KUBECONFIG", "value": sidecar_env}],
                    "volumeMounts": [
                        {"name": "other", "mountPath": "/etc"},
                        {"name": "bluegreen-home", "mountPath": mount_path, "readOnly": true},
                    ],
                },
            ],
            "volumes": [
                {"name": "other", "emptyDir": {}},
                volume,
            ],
        })
    }

    fn secret_volume() -> Value {
        json!({"name": "bluegreen-home", "secret": {"secretName": "orders-green-bluegreen-home"}})
    }

    #[test]
    fn the_sidecars_kubeconfig_is_found_under_the_deepest_mount() {
        let spec = pod(
            "/etc/bluegreen/home/kubeconfig",
            "/etc/bluegreen/home/",
            &secret_volume(),
        );
        assert_eq!(
            kubeconfig_mount(&spec),
            Some(SecretMount {
                secret: "orders-green-bluegreen-home".into(),
                dir: "/etc/bluegreen/home".into(),
                file: "kubeconfig".into(),
            })
        );
    }

    #[test]
    fn no_mount_without_the_variable_a_secret_volume_or_a_mount_above_the_file() {
        let no_secret = pod(
            "/etc/bluegreen/home/kubeconfig",
            "/etc/bluegreen/home",
            &json!({"name": "bluegreen-home", "emptyDir": {}}),
        );
        assert_eq!(kubeconfig_mount(&no_secret), None);
        let elsewhere = pod("/var/kubeconfig", "/etc/bluegreen/home", &secret_volume());
        assert_eq!(kubeconfig_mount(&elsewhere), None);
        let prefix_only = pod(
            "/etc/bluegreen/homekubeconfig",
            "/etc/bluegreen/home",
            &secret_volume(),
        );
        assert_eq!(kubeconfig_mount(&prefix_only), None);
        assert_eq!(kubeconfig_mount(&json!({"containers": []})), None);
        assert_eq!(kubeconfig_mount(&json!("not a pod spec")), None);
    }

    #[test]
    fn another_container_and_variable_can_be_asked_for() {
        let spec = json!({
            "containers": [{
                "name": "flink-main-container",
                "env": [{"name": "BLUEGREEN_HOME_KUBECONFIG", "value": "/etc/bluegreen/home/kubeconfig"}],
                "volumeMounts": [{"name": "bluegreen-home", "mountPath": "/etc/bluegreen/home"}],
            }],
            "volumes": [secret_volume()],
        });
        assert_eq!(
            env_file_mount(&spec, "flink-main-container", "BLUEGREEN_HOME_KUBECONFIG")
                .map(|m| m.file),
            Some("kubeconfig".into())
        );
        assert_eq!(kubeconfig_mount(&spec), None);
    }

    #[tokio::test]
    async fn every_key_is_written_and_a_missing_secret_is_refused() -> Result<(), Error> {
        let server = bluegreen_local_apiserver::LocalApiServer::start(
            bluegreen_local_apiserver::Options::default(),
        )
        .await
        .map_err(|e| Error::Crd(e.to_string()))?;
        let mount = SecretMount {
            secret: "home".into(),
            dir: "/etc/bluegreen/home".into(),
            file: "kubeconfig".into(),
        };
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            what: "a temporary directory",
            path: String::new(),
            source,
        })?;
        let err = materialize(&server.client(), "default", &mount, dir.path()).await;
        assert!(
            matches!(&err, Err(Error::SecretVolume { secret, .. }) if secret == "home"),
            "{err:?}"
        );
        server
            .apply_object(&json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "home", "namespace": "default"},
                "stringData": {"kubeconfig": "apiVersion: v1", "token": "t1"},
            }))
            .map_err(|e| Error::Crd(e.to_string()))?;
        materialize(&server.client(), "default", &mount, dir.path()).await?;
        let read = |f: &str| std::fs::read_to_string(dir.path().join(f)).unwrap_or_default();
        assert_eq!(
            (read("kubeconfig").as_str(), read("token").as_str()),
            ("apiVersion: v1", "t1")
        );
        Ok(())
    }
}
