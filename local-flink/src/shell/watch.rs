//! The watch of `FlinkDeployment`s: one actor per resource, told of every change and of the
//! deletion.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use kube::api::DynamicObject;
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::DeploymentRef;
use super::actor::{self, Deployment, Job, Msg};
use crate::crd::flink_deployment_resource;

/// Watches `FlinkDeployment`s through `client` (in `namespace`, or in all namespaces) and
/// forwards their events to one actor per resource, driving the job `new_job` makes for it. The
/// actors end with the watch (when the runner aborts it).
pub(crate) async fn watch<J: Job>(
    client: kube::Client,
    namespace: Option<String>,
    new_job: impl Fn(&DeploymentRef) -> J,
) {
    let resource = flink_deployment_resource();
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut actors = Actors::default();
    let mut listed: HashSet<DeploymentRef> = HashSet::new();
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                tracing::debug!(error = %e, "FlinkDeployment watch error (retrying)");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        match event {
            watcher::Event::Init => listed.clear(),
            watcher::Event::InitApply(obj) | watcher::Event::Apply(obj) => {
                let key = DeploymentRef::new(obj.namespace().unwrap_or_default(), obj.name_any());
                listed.insert(key.clone());
                let (tx, _) = actors.0.entry(key.clone()).or_insert_with(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    let api = Api::namespaced_with(client.clone(), &key.namespace, &resource);
                    let job = new_job(&key);
                    let task = tokio::spawn(actor::run(job, Deployment::new(key, api), rx));
                    (tx, task)
                });
                let _ = tx.send(Msg::Apply(Box::new(obj)));
            }
            watcher::Event::InitDone => {
                let gone: Vec<DeploymentRef> = actors
                    .0
                    .keys()
                    .filter(|k| !listed.contains(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    if let Some((tx, _)) = actors.0.remove(&key) {
                        let _ = tx.send(Msg::Deleted);
                    }
                }
            }
            watcher::Event::Delete(obj) => {
                let key = DeploymentRef::new(obj.namespace().unwrap_or_default(), obj.name_any());
                if let Some((tx, _)) = actors.0.remove(&key) {
                    let _ = tx.send(Msg::Deleted);
                }
            }
        }
    }
}

/// The actor of every deployment; they end with the watch.
#[derive(Default)]
struct Actors(HashMap<DeploymentRef, (mpsc::UnboundedSender<Msg>, JoinHandle<()>)>);

impl Drop for Actors {
    fn drop(&mut self) {
        for (_, task) in self.0.values() {
            task.abort();
        }
    }
}
