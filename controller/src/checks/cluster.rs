//! `spec.cluster` and `coordination.sharedStorage` by their fields, and the storage a move to
//! another cluster needs (pure). Whether the named Secret, kubeconfig and cluster are there is
//! checked by `crate::clusters` at every observation.

use crate::error::SpecError;
use crate::resource::{FlinkBlueGreenDeploymentSpec, RestoreFrom, TargetCluster};

/// Flink's keys of checkpoint and savepoint directories (Flink 1.x and 2.x spellings).
pub const STORAGE_KEYS: [&str; 4] = [
    "state.savepoints.dir",
    "state.checkpoints.dir",
    "execution.checkpointing.savepoint-dir",
    "execution.checkpointing.dir",
];

/// The keys of which one names where a savepoint is written.
const SAVEPOINT_KEYS: [&str; 2] = [
    "state.savepoints.dir",
    "execution.checkpointing.savepoint-dir",
];

/// The keys of which one names where checkpoints are written.
const CHECKPOINT_KEYS: [&str; 2] = ["state.checkpoints.dir", "execution.checkpointing.dir"];

/// Checks `spec.cluster` and `spec.coordination.sharedStorage` by their fields.
pub fn check(spec: &FlinkBlueGreenDeploymentSpec) -> Result<(), SpecError> {
    for (i, prefix) in spec.coordination.shared_storage.iter().enumerate() {
        if !prefix.starts_with("file:///") || !prefix.ends_with('/') {
            return Err(SpecError::new(
                format!("spec.coordination.sharedStorage[{i}]"),
                format!(
                    "is {prefix:?}: list the file:// directories every cluster mounts as one file system, each ending in '/' (e.g. \"file:///mnt/flink/\"); other schemes (s3://, gs://, hdfs://) are shared already"
                ),
            ));
        }
    }
    let Some(cluster) = &spec.cluster else {
        return Ok(());
    };
    check_target(cluster)
}

fn check_target(cluster: &TargetCluster) -> Result<(), SpecError> {
    let secret = &cluster.kubeconfig_secret;
    if !is_dns_subdomain(&secret.name) {
        return Err(SpecError::new(
            "spec.cluster.kubeconfigSecret.name",
            format!(
                "is {:?}: name the Secret in this namespace that holds the target cluster's kubeconfig (a DNS subdomain)",
                secret.name
            ),
        ));
    }
    let key_ok = !secret.key.is_empty()
        && secret
            .key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !key_ok {
        return Err(SpecError::new(
            "spec.cluster.kubeconfigSecret.key",
            format!(
                "is {:?}: a Secret key is made of letters, digits, '-', '_' and '.' (default \"kubeconfig\")",
                secret.key
            ),
        ));
    }
    if let Some(namespace) = &cluster.namespace
        && !is_dns_label(namespace)
    {
        return Err(SpecError::new(
            "spec.cluster.namespace",
            format!(
                "is {namespace:?}: a namespace of the target cluster is a DNS label (at most 63 lowercase letters, digits and '-')"
            ),
        ));
    }
    let url = &cluster.flink_rest_url;
    let parses = reqwest::Url::parse(&url.replace("{name}", "job").replace("{namespace}", "ns"))
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
    if !url.contains("{name}") || !parses {
        return Err(SpecError::new(
            "spec.cluster.flinkRestUrl",
            format!(
                "is {url:?}: give the URL of a job's Flink REST API in the target cluster as this controller reaches it, with {{name}} for the child and optionally {{namespace}}, e.g. \"https://{{name}}.flink.example.com\""
            ),
        ));
    }
    if let Some(server) = &cluster.home_api_server
        && !reqwest::Url::parse(server).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
    {
        return Err(SpecError::new(
            "spec.cluster.homeApiServer",
            format!(
                "is {server:?}: give the URL of this cluster's API server as pods in the target cluster reach it, e.g. \"https://api.home.example.com:6443\", or leave it out for the controller's --home-api-server"
            ),
        ));
    }
    Ok(())
}

/// Why a move of the job to another cluster (`from` the running job's spec, `to` the new one)
/// cannot carry its state: a checkpoint or savepoint directory of either on a path only one
/// cluster reaches (`file://` or no scheme, outside `coordination.sharedStorage`), or no
/// directory named for the state the move restores. Flink's `state.savepoints.dir` of the
/// running job is where its savepoint goes unless `coordination.savepoint.targetDirectory` is
/// set.
pub fn move_storage(
    from: Option<&FlinkBlueGreenDeploymentSpec>,
    to: &FlinkBlueGreenDeploymentSpec,
) -> Result<(), SpecError> {
    let shared = &to.coordination.shared_storage;
    let local = |path: &str| !is_shared(path, shared);
    if let Some(target) = &to.coordination.savepoint.target_directory
        && local(target)
    {
        return Err(local_path(
            "spec.coordination.savepoint.targetDirectory",
            target,
        ));
    }
    for (which, spec) in [("the running job's", from), ("the new", Some(to))] {
        let Some(spec) = spec else { continue };
        let conf = &spec.template.spec.flink_configuration;
        for key in STORAGE_KEYS {
            if let Some(path) = conf.get(key).filter(|p| local(p)) {
                let mut refused = local_path(
                    &format!("spec.template.spec.flinkConfiguration[\"{key}\"]"),
                    path,
                );
                refused.message = format!("({which} template) {}", refused.message);
                return Err(refused);
            }
        }
    }
    let running = from.unwrap_or(to);
    let conf = &running.template.spec.flink_configuration;
    let named = |keys: &[&str]| keys.iter().any(|k| conf.contains_key(*k));
    match to.coordination.restore_from {
        RestoreFrom::Savepoint
            if to.coordination.savepoint.target_directory.is_none() && !named(&SAVEPOINT_KEYS) =>
        {
            Err(SpecError::new(
                "spec.template.spec.flinkConfiguration[\"state.savepoints.dir\"]",
                "is not set in the running job's template: a move to another cluster restores a savepoint there, so name where it is written, on storage both clusters reach (s3://, gs://, hdfs:// …, or a file:// directory listed in coordination.sharedStorage), or set coordination.savepoint.targetDirectory",
            ))
        }
        RestoreFrom::LastCheckpoint if !named(&CHECKPOINT_KEYS) => Err(SpecError::new(
            "spec.template.spec.flinkConfiguration[\"state.checkpoints.dir\"]",
            "is not set in the running job's template: a move to another cluster with restoreFrom: lastCheckpoint restores a checkpoint there, so name where checkpoints are written, on storage both clusters reach",
        )),
        _ => Ok(()),
    }
}

/// The refusal of a local path in `field`.
fn local_path(field: &str, path: &str) -> SpecError {
    SpecError::new(
        field,
        format!(
            "is {path:?}, a path only one cluster reaches: a move to another cluster restores the job's state there. Use storage both clusters reach (s3://, gs://, hdfs:// …), or list a file:// directory every cluster mounts in coordination.sharedStorage"
        ),
    )
}

/// Whether `path` is on storage every cluster reaches: a scheme other than `file`, or a
/// `file://` path under one of `shared`.
fn is_shared(path: &str, shared: &[String]) -> bool {
    match path.split_once("://") {
        Some((scheme, _)) if !scheme.eq_ignore_ascii_case("file") => true,
        Some(_) => shared
            .iter()
            .any(|prefix| path.starts_with(prefix.as_str())),
        None => false,
    }
}

/// A DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a
/// letter or digit.
fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// A DNS-1123 subdomain: dot-separated labels, at most 253 characters.
fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::spec;
    use crate::resource::KubeconfigSecret;

    /// A change that breaks one field of a target cluster.
    type Break = fn(&mut TargetCluster);

    fn target() -> TargetCluster {
        TargetCluster {
            kubeconfig_secret: KubeconfigSecret {
                name: "east".into(),
                key: "kubeconfig".into(),
            },
            namespace: Some("jobs".into()),
            flink_rest_url: "https://{name}.flink.example.com".into(),
            home_api_server: None,
        }
    }

    fn with_conf(pairs: &[(&str, &str)]) -> FlinkBlueGreenDeploymentSpec {
        let mut s = spec("local:///job.jar");
        for (k, v) in pairs {
            s.template
                .spec
                .flink_configuration
                .insert((*k).into(), (*v).into());
        }
        s
    }

    #[test]
    fn a_target_cluster_is_refused_by_the_field_that_is_wrong() {
        let mut s = spec("local:///job.jar");
        s.cluster = Some(Box::new(target()));
        assert_eq!(check(&s), Ok(()));
        let cases: [(Break, &str); 5] = [
            (
                |t| t.kubeconfig_secret.name = "East".into(),
                "spec.cluster.kubeconfigSecret.name",
            ),
            (
                |t| t.kubeconfig_secret.key = "a/b".into(),
                "spec.cluster.kubeconfigSecret.key",
            ),
            (
                |t| t.namespace = Some("jobs_1".into()),
                "spec.cluster.namespace",
            ),
            (
                |t| t.flink_rest_url = "https://flink.example.com".into(),
                "spec.cluster.flinkRestUrl",
            ),
            (
                |t| t.home_api_server = Some("api.home:6443".into()),
                "spec.cluster.homeApiServer",
            ),
        ];
        for (break_it, field) in cases {
            let mut t = target();
            break_it(&mut t);
            s.cluster = Some(Box::new(t));
            assert_eq!(check(&s).map_err(|e| e.field), Err(field.to_owned()));
        }
        let mut s = spec("local:///job.jar");
        s.coordination.shared_storage = vec!["/mnt/nfs".into()];
        assert_eq!(
            check(&s).map_err(|e| e.field),
            Err("spec.coordination.sharedStorage[0]".to_owned())
        );
    }

    #[test]
    fn a_move_refuses_local_state_paths_naming_the_key_and_accepts_shared_ones() {
        let local = with_conf(&[("state.savepoints.dir", "file:///tmp/savepoints")]);
        let refused = move_storage(Some(&local), &local).expect_err("a local savepoint dir");
        assert_eq!(
            refused.field,
            "spec.template.spec.flinkConfiguration[\"state.savepoints.dir\"]"
        );
        assert!(
            refused.message.contains("coordination.sharedStorage"),
            "{refused}"
        );
        let bare = with_conf(&[
            ("state.savepoints.dir", "s3://b/sp"),
            ("execution.checkpointing.dir", "/data/chk"),
        ]);
        assert_eq!(
            move_storage(Some(&bare), &bare).map_err(|e| e.field),
            Err("spec.template.spec.flinkConfiguration[\"execution.checkpointing.dir\"]".into())
        );
        let s3 = with_conf(&[("state.savepoints.dir", "s3://b/sp")]);
        assert_eq!(move_storage(Some(&s3), &s3), Ok(()));
        // The running job's local directory is refused even when the new template's is shared.
        assert!(move_storage(Some(&local), &s3).is_err());
        let mut nfs = with_conf(&[
            ("state.savepoints.dir", "file:///mnt/nfs/sp"),
            ("state.checkpoints.dir", "file:///mnt/nfs/chk"),
        ]);
        assert!(move_storage(Some(&nfs), &nfs).is_err());
        nfs.coordination.shared_storage = vec!["file:///mnt/nfs/".into()];
        assert_eq!(move_storage(Some(&nfs), &nfs), Ok(()));
        let mut target = with_conf(&[]);
        target.coordination.savepoint.target_directory = Some("file:///tmp/x".into());
        assert_eq!(
            move_storage(None, &target).map_err(|e| e.field),
            Err("spec.coordination.savepoint.targetDirectory".into())
        );
    }

    #[test]
    fn a_move_needs_to_know_where_the_state_it_restores_is_written() {
        let unnamed = with_conf(&[]);
        assert_eq!(
            move_storage(Some(&unnamed), &unnamed).map_err(|e| e.field),
            Err("spec.template.spec.flinkConfiguration[\"state.savepoints.dir\"]".into())
        );
        let mut targeted = with_conf(&[]);
        targeted.coordination.savepoint.target_directory = Some("gs://b/sp".into());
        assert_eq!(move_storage(Some(&targeted), &targeted), Ok(()));
        let mut from_checkpoint = with_conf(&[("state.savepoints.dir", "s3://b/sp")]);
        from_checkpoint.coordination.restore_from = RestoreFrom::LastCheckpoint;
        assert_eq!(
            move_storage(Some(&from_checkpoint), &from_checkpoint).map_err(|e| e.field),
            Err("spec.template.spec.flinkConfiguration[\"state.checkpoints.dir\"]".into())
        );
    }
}
