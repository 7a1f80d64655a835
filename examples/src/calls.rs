//! The controller's calls, counted and held: a [`CallGate`] numbers every call the controller
//! makes to the Kubernetes API and to Flink's REST API and can hold every call after the k-th,
//! and a [`CallProxy`] in front of each of the two servers is where the controller's calls pass
//! through it (the controller is given the proxies' addresses, so only its own calls are seen).
//!
//! What counts as a call: every request/response exchange — Kubernetes GET, LIST, CREATE,
//! UPDATE, PATCH, DELETE (events included) and every Flink REST request. Watch streams
//! (`?watch=true`) do not: they are long-lived reads that change nothing, opened by kube-runtime
//! on its own schedule, and a crash while one is open leaves the world as the last counted call
//! left it. They pass through uncounted and are never held.
//!
//! Every write that passes (counted or not) is also recorded with its answer, so that a test can
//! check afterwards what the controller did: [`CallGate::writes`].

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use bluegreen_controller::context::Context;
use http::{HeaderMap, Method, StatusCode, header};
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Which server a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upstream {
    /// The Kubernetes API server.
    Kubernetes,
    /// Flink's REST API.
    FlinkRest,
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Kubernetes => "k8s",
            Self::FlinkRest => "flink",
        })
    }
}

/// One counted call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The server.
    pub upstream: Upstream,
    /// HTTP method.
    pub method: String,
    /// Path (and query) under the server's root.
    pub path: String,
    /// The answer's status, once it came.
    pub status: Option<u16>,
    /// When it was made, since counting started.
    pub at: std::time::Duration,
}

impl Call {
    /// Whether the call can change something (anything but GET).
    pub fn is_write(&self) -> bool {
        self.method != "GET"
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.split('?').next().unwrap_or_default();
        write!(
            f,
            "{:>5} ms {} {} {path}",
            self.at.as_millis(),
            self.upstream,
            self.method
        )?;
        if let Some(status) = self.status {
            write!(f, " -> {status}")?;
        }
        Ok(())
    }
}

/// A write that reached a server, with its answer (recorded whether or not calls are counted).
#[derive(Debug, Clone)]
pub struct Write {
    /// The server.
    pub upstream: Upstream,
    /// HTTP method.
    pub method: String,
    /// Path (and query) under the server's root.
    pub path: String,
    /// The request body, when it is JSON.
    pub request: Value,
    /// The answer's status.
    pub status: u16,
    /// The answer's body, when it is JSON (for Kubernetes: the object as written).
    pub response: Value,
    /// When the answer came.
    pub at: std::time::Instant,
}

impl Write {
    /// The resourceVersion of the object a Kubernetes write answered with (0 when none).
    pub fn resource_version(&self) -> u64 {
        self.response
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Whether the server accepted it (2xx).
    pub fn accepted(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Which calls a [`CallGate`] holds once it counts.
#[derive(Clone, Default)]
pub enum Hold {
    /// None.
    #[default]
    Never,
    /// Every call after the first `k` (the controller is killed after its k-th call).
    After(usize),
    /// The first call that matches and every call after it.
    From(Arc<dyn Fn(&Call) -> bool + Send + Sync>),
}

impl std::fmt::Debug for Hold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Never => f.write_str("Never"),
            Self::After(k) => write!(f, "After({k})"),
            Self::From(_) => f.write_str("From(..)"),
        }
    }
}

#[derive(Debug, Default)]
struct GateState {
    counting: bool,
    hold: Hold,
    /// Bumped by every [`CallGate::count`]; a held call belongs to one generation.
    generation: u64,
    /// When counting started.
    since: Option<std::time::Instant>,
    /// The generation whose held calls may go on.
    released: u64,
    calls: Vec<Call>,
    in_flight: usize,
    held: Vec<Call>,
    writes: Vec<Write>,
    /// Calls (counted or not, watches aside) not answered yet.
    active: usize,
    /// When the last call began or ended.
    last_activity: Option<std::time::Instant>,
}

/// Numbers the controller's calls and holds every call after the k-th (cheap to clone: shared).
#[derive(Clone, Default)]
pub struct CallGate {
    state: Arc<watch::Sender<GateState>>,
}

/// What [`CallGate::admit`] decided.
enum Admission {
    /// Not counted.
    Pass,
    /// Counted as call `index + 1`; answered later through [`Ticket`].
    Counted(Ticket),
}

/// A counted call that has not been answered yet; dropping it without an answer (the client
/// went away) still ends it.
struct Ticket {
    gate: CallGate,
    index: usize,
    generation: u64,
}

impl Ticket {
    fn answered(self, status: u16) {
        self.gate.state.send_modify(|s| {
            if s.generation == self.generation
                && let Some(call) = s.calls.get_mut(self.index)
            {
                call.status = Some(status);
            }
        });
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.gate.state.send_modify(|s| {
            if s.generation == self.generation {
                s.in_flight = s.in_flight.saturating_sub(1);
            }
        });
    }
}

/// What [`CallGate::wait_held`] saw: the calls that happened and the one held.
#[derive(Debug, Clone)]
pub struct Held {
    /// How many counted calls were answered before the hold (k).
    pub after: usize,
    /// The first call held (call k + 1).
    pub call: Call,
}

impl CallGate {
    /// A gate that counts nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts counting from zero, holding the calls `hold` names (never answered unless
    /// [`CallGate::release`]d).
    pub fn count(&self, hold: Hold) {
        self.state.send_modify(|s| {
            s.counting = true;
            s.hold = hold;
            s.generation += 1;
            s.since = Some(std::time::Instant::now());
            s.calls.clear();
            s.held.clear();
            s.in_flight = 0;
        });
    }

    /// Stops counting: calls pass uncounted (held calls stay held).
    pub fn stop_counting(&self) {
        self.state.send_modify(|s| s.counting = false);
    }

    /// Lets the calls held since the last [`CallGate::count`] go on (uncounted); calls held
    /// in an earlier generation (a killed controller's) never do.
    pub fn release(&self) {
        self.state.send_modify(|s| {
            s.released = s.generation;
            s.counting = false;
        });
    }

    /// The calls counted since the last [`CallGate::count`], in order.
    pub fn calls(&self) -> Vec<Call> {
        self.state.borrow().calls.clone()
    }

    /// Every write that passed, in the order the answers came.
    pub fn writes(&self) -> Vec<Write> {
        self.state.borrow().writes.clone()
    }

    /// The writes after the first `n`.
    pub fn writes_since(&self, n: usize) -> Vec<Write> {
        self.state
            .borrow()
            .writes
            .get(n..)
            .map(<[Write]>::to_vec)
            .unwrap_or_default()
    }

    /// How many writes passed so far.
    pub fn write_count(&self) -> usize {
        self.state.borrow().writes.len()
    }

    /// Waits until a call is held and every counted call before it has been answered: then
    /// calls 1..=k happened and call k + 1 did not. `None` if that does not happen in `within`.
    pub async fn wait_held(&self, within: std::time::Duration) -> Option<Held> {
        let mut rx = self.state.subscribe();
        let seen = tokio::time::timeout(
            within,
            rx.wait_for(|s| !s.held.is_empty() && s.in_flight == 0),
        )
        .await
        .ok()?
        .ok()?;
        Some(Held {
            after: seen.calls.len(),
            call: seen.held[0].clone(),
        })
    }

    /// Waits until no call has been made or answered for `quiet` (and none is open, watches
    /// aside): the controller is idle. `false` if that does not happen in `within`.
    pub async fn wait_quiet(
        &self,
        quiet: std::time::Duration,
        within: std::time::Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let (active, last) = {
                let s = self.state.borrow();
                (s.active, s.last_activity)
            };
            let idle_for = last.map_or(quiet, |t| t.elapsed());
            if active == 0 && idle_for >= quiet {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(
                quiet
                    .saturating_sub(idle_for)
                    .max(std::time::Duration::from_millis(5)),
            )
            .await;
        }
    }

    /// Marks a call (counted or not) begun; the guard marks it ended.
    fn begin(&self) -> Activity {
        self.state.send_modify(|s| {
            s.active += 1;
            s.last_activity = Some(std::time::Instant::now());
        });
        Activity(self.clone())
    }

    async fn admit(&self, mut call: Call, streaming: bool) -> Admission {
        let mut hold = None;
        let mut admission = None;
        self.state.send_modify(|s| {
            if !s.counting || streaming {
                return;
            }
            call.at = s.since.map(|t| t.elapsed()).unwrap_or_default();
            let holding = !s.held.is_empty()
                || match &s.hold {
                    Hold::Never => false,
                    Hold::After(k) => s.calls.len() >= *k,
                    Hold::From(first) => first(&call),
                };
            if holding {
                s.held.push(call);
                hold = Some(s.generation);
            } else {
                s.calls.push(call);
                s.in_flight += 1;
                admission = Some((s.calls.len() - 1, s.generation));
            }
        });
        if let Some(generation) = hold {
            let mut rx = self.state.subscribe();
            // Held until released; a crashed controller never sees an answer.
            let _ = rx.wait_for(|s| s.released == generation).await;
        }
        match admission {
            Some((index, generation)) => Admission::Counted(Ticket {
                gate: self.clone(),
                index,
                generation,
            }),
            None => Admission::Pass,
        }
    }

    fn record(&self, write: Write) {
        self.state.send_modify(|s| s.writes.push(write));
    }
}

/// A call in progress, for [`CallGate::wait_quiet`].
struct Activity(CallGate);

impl Drop for Activity {
    fn drop(&mut self) {
        self.0.state.send_modify(|s| {
            s.active = s.active.saturating_sub(1);
            s.last_activity = Some(std::time::Instant::now());
        });
    }
}

/// A proxy in front of one server through which the controller's calls pass.
pub struct CallProxy {
    addr: SocketAddr,
    task: JoinHandle<()>,
    close: watch::Sender<bool>,
}

struct ProxyState {
    upstream: Upstream,
    base: String,
    gate: CallGate,
    http: reqwest::Client,
    /// Turns true when the proxy stops: held calls end unanswered.
    closed: watch::Receiver<bool>,
}

impl CallProxy {
    /// Starts a proxy on 127.0.0.1 forwarding to `base` (e.g. `http://127.0.0.1:4000`).
    pub async fn start(upstream: Upstream, base: &str, gate: CallGate) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the call proxy")?;
        let addr = listener.local_addr()?;
        let (close, closed) = watch::channel(false);
        let state = Arc::new(ProxyState {
            upstream,
            base: base.trim_end_matches('/').to_owned(),
            gate,
            http: reqwest::Client::builder()
                .no_proxy()
                .build()
                .context("build the proxy's HTTP client")?,
            closed,
        });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { addr, task, close })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for CallProxy {
    fn drop(&mut self) {
        self.close.send_replace(true);
        self.task.abort();
    }
}

/// Headers that belong to one hop.
fn hop_by_hop(name: &header::HeaderName) -> bool {
    [
        header::HOST,
        header::CONNECTION,
        header::CONTENT_LENGTH,
        header::TRANSFER_ENCODING,
    ]
    .contains(name)
}

fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !hop_by_hop(name) {
            to.append(name.clone(), value.clone());
        }
    }
}

async fn forward(State(p): State<Arc<ProxyState>>, req: Request) -> Response {
    let method = req.method().clone();
    let path = req
        .uri()
        .path_and_query()
        .map_or_else(|| "/".to_owned(), ToString::to_string);
    let streaming = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"));
    let headers = req.headers().clone();
    let Ok(body) = axum::body::to_bytes(req.into_body(), 64 * 1024 * 1024).await else {
        return (StatusCode::BAD_REQUEST, "unreadable body").into_response();
    };
    let call = Call {
        upstream: p.upstream,
        method: method.to_string(),
        path: path.clone(),
        status: None,
        at: std::time::Duration::ZERO,
    };
    // A call admitted (or held, then released) goes on even if the client went away meanwhile,
    // as a request in flight can reach a server late on a real network.
    let state = Arc::clone(&p);
    let exchange = tokio::spawn(async move {
        let mut closed = state.closed.clone();
        let admission = tokio::select! {
            admission = state.gate.admit(call, streaming) => admission,
            _ = closed.wait_for(|c| *c) => return Err("the proxy stopped".to_owned()),
        };
        // A held call is no activity: it has not happened (yet).
        let activity = (!streaming).then(|| state.gate.begin());
        let mut out = state
            .http
            .request(method.clone(), format!("{}{path}", state.base));
        let mut forwarded = HeaderMap::new();
        copy_headers(&headers, &mut forwarded);
        out = out.headers(forwarded).body(body.clone());
        let answer = match out.send().await {
            Ok(answer) => answer,
            Err(e) => {
                return Err(format!("upstream {}: {e}", state.base));
            }
        };
        let status = answer.status();
        let mut answer_headers = HeaderMap::new();
        copy_headers(answer.headers(), &mut answer_headers);
        if streaming {
            let chunks = futures::stream::unfold(answer, |mut answer| async move {
                match answer.chunk().await {
                    Ok(Some(chunk)) => Some((Ok::<_, reqwest::Error>(chunk), answer)),
                    Ok(None) | Err(_) => None,
                }
            });
            return Ok((status, answer_headers, Body::from_stream(chunks)));
        }
        let bytes = answer.bytes().await.unwrap_or_default();
        if method != Method::GET {
            state.gate.record(Write {
                upstream: state.upstream,
                method: method.to_string(),
                path,
                request: serde_json::from_slice(&body).unwrap_or(Value::Null),
                status: status.as_u16(),
                response: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                at: std::time::Instant::now(),
            });
        }
        // Answered (and no longer in flight) only once recorded.
        if let Admission::Counted(ticket) = admission {
            ticket.answered(status.as_u16());
        }
        drop(activity);
        Ok((status, answer_headers, Body::from(bytes)))
    });
    match exchange.await {
        Ok(Ok((status, headers, body))) => {
            let mut response = Response::new(body);
            *response.status_mut() = status;
            *response.headers_mut() = headers;
            response
        }
        Ok(Err(message)) => (StatusCode::BAD_GATEWAY, message).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

/// The two proxies a controller's calls pass through, sharing one [`CallGate`].
pub struct ControllerCalls {
    /// Numbers and holds the calls.
    pub gate: CallGate,
    kubernetes: CallProxy,
    flink: CallProxy,
    flink_template: String,
    config: kube::Config,
}

impl ControllerCalls {
    /// Proxies in front of the API server `config` points at and of the Flink REST server of
    /// `rest_url_template` (`http://host:port/...{namespace}/{name}`).
    pub async fn start(config: kube::Config, rest_url_template: &str) -> anyhow::Result<Self> {
        let gate = CallGate::new();
        let kubernetes = CallProxy::start(
            Upstream::Kubernetes,
            config.cluster_url.to_string().trim_end_matches('/'),
            gate.clone(),
        )
        .await?;
        let (scheme, rest) = rest_url_template
            .split_once("://")
            .context("the REST URL template has a scheme")?;
        let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let flink = CallProxy::start(
            Upstream::FlinkRest,
            &format!("{scheme}://{authority}"),
            gate.clone(),
        )
        .await?;
        let flink_template = format!("{}/{tail}", flink.url());
        Ok(Self {
            gate,
            kubernetes,
            flink,
            flink_template,
            config,
        })
    }

    /// A controller context whose calls go through the proxies (a fresh client: what a
    /// restarted controller process would have).
    pub fn context(&self, identity: &str) -> anyhow::Result<Context> {
        let mut config = self.config.clone();
        config.cluster_url = self
            .kubernetes
            .url()
            .parse()
            .context("the proxy's URL is a URI")?;
        let client = kube::Client::try_from(config).context("a client of the proxy")?;
        Ok(Context::new(
            client,
            &self.flink_template,
            std::time::Duration::from_secs(2),
            identity,
        ))
    }

    /// The Flink REST URL template through the proxy.
    pub fn rest_url_template(&self) -> &str {
        &self.flink_template
    }

    /// The Flink proxy's address (for diagnostics).
    pub fn flink_url(&self) -> String {
        self.flink.url()
    }
}
