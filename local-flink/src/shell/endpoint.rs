//! What a runner runs beside its deployments' actors: one REST endpoint for every deployment
//! (`/{namespace}/{name}/...`) and the watch; both end when the runner is dropped.

use std::net::SocketAddr;

use axum::Router;
use tokio::task::JoinHandle;

use super::DeploymentRef;
use super::actor::Job;
use super::watch::watch;
use crate::Error;

/// A runner's REST endpoint and watch, running.
#[derive(Debug)]
pub(crate) struct Shell {
    rest_addr: SocketAddr,
    tasks: [JoinHandle<()>; 2],
}

impl Shell {
    /// Serves `router` on 127.0.0.1:`port` (`0`: any free port; `server` names it in errors and
    /// logs) and watches `FlinkDeployment`s through `client` (in `namespace`, or in all), with
    /// the job `new_job` makes for each.
    pub async fn start<J: Job>(
        server: &'static str,
        router: Router,
        port: u16,
        client: kube::Client,
        namespace: Option<String>,
        new_job: impl Fn(&DeploymentRef) -> J + Send + 'static,
    ) -> Result<Self, Error> {
        let addr = format!("127.0.0.1:{port}");
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| Error::Bind {
                server,
                addr: addr.clone(),
                source,
            })?;
        let rest_addr = listener.local_addr().map_err(|source| Error::Bind {
            server,
            addr,
            source,
        })?;
        let rest = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).await {
                tracing::warn!(error = %e, server, "REST endpoint stopped");
            }
        });
        let watch = tokio::spawn(watch(client, namespace, new_job));
        Ok(Self {
            rest_addr,
            tasks: [rest, watch],
        })
    }

    /// The REST URL template to configure the controller with:
    /// `http://127.0.0.1:<port>/{namespace}/{name}`.
    pub fn rest_url_template(&self) -> String {
        format!("http://{}/{{namespace}}/{{name}}", self.rest_addr)
    }

    /// The REST base URL of one deployment.
    pub fn rest_url(&self, d: &DeploymentRef) -> String {
        format!("http://{}/{}/{}", self.rest_addr, d.namespace, d.name)
    }

    /// Stops the endpoint and the watch (and with it every actor).
    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.stop();
    }
}
