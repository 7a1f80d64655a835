//! Prometheus metrics of the controller, registered once.

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// The controller's metrics.
#[derive(Clone)]
pub struct Metrics {
    /// The registry they live in (served on `/metrics`).
    pub registry: Registry,
    /// Reconciles run.
    pub reconciles: IntCounter,
    /// Failed reconciles, by error kind.
    pub errors: IntCounterVec,
    /// Reconcile duration.
    pub reconcile_duration: Histogram,
    /// Current coordination stage per resource (1 for the current stage, 0 for the others).
    pub stage: IntGaugeVec,
    /// W of the handover in progress per resource.
    pub toggle: IntGaugeVec,
    /// `bluegreen_controller_waiting_for_watermark{namespace,name,color}`: 1 while the handover
    /// waits for that job's gate watermark to pass W.
    pub waiting_for_watermark: IntGaugeVec,
    /// Finished handovers by outcome.
    pub handovers: IntCounterVec,
    /// Handover durations (start to the outgoing job's deletion).
    pub handover_duration: Histogram,
    /// 1 while this replica holds the leader lease.
    pub leader: IntGaugeVec,
}

impl Metrics {
    /// Creates and registers every metric in a fresh registry.
    pub fn new() -> Self {
        let registry = Registry::new();
        let reconciles = IntCounter::new("bluegreen_controller_reconciles_total", "Reconciles run")
            .expect("valid metric");
        let errors = IntCounterVec::new(
            Opts::new(
                "bluegreen_controller_reconcile_errors_total",
                "Failed reconciles by error kind",
            ),
            &["kind"],
        )
        .expect("valid metric");
        let reconcile_duration = Histogram::with_opts(
            HistogramOpts::new(
                "bluegreen_controller_reconcile_duration_seconds",
                "Reconcile duration",
            )
            .buckets(vec![0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
        )
        .expect("valid metric");
        let stage = IntGaugeVec::new(
            Opts::new(
                "bluegreen_controller_stage",
                "Coordination stage per deployment (1 = current)",
            ),
            &["namespace", "name", "stage"],
        )
        .expect("valid metric");
        let toggle = IntGaugeVec::new(
            Opts::new(
                "bluegreen_controller_watermark_toggle_value",
                "W of the handover in progress (epoch ms)",
            ),
            &["namespace", "name"],
        )
        .expect("valid metric");
        let waiting_for_watermark = IntGaugeVec::new(
            Opts::new(
                "bluegreen_controller_waiting_for_watermark",
                "1 while the handover waits for this job's gate watermark to pass W",
            ),
            &["namespace", "name", "color"],
        )
        .expect("valid metric");
        let handovers = IntCounterVec::new(
            Opts::new(
                "bluegreen_controller_handovers_total",
                "Finished handovers by outcome",
            ),
            &["outcome"],
        )
        .expect("valid metric");
        let handover_duration = Histogram::with_opts(
            HistogramOpts::new(
                "bluegreen_controller_handover_duration_seconds",
                "Handover duration",
            )
            .buckets(vec![
                1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0,
            ]),
        )
        .expect("valid metric");
        let leader = IntGaugeVec::new(
            Opts::new(
                "bluegreen_controller_leader",
                "1 while this replica holds the lease",
            ),
            &["identity"],
        )
        .expect("valid metric");
        for m in [
            Box::new(reconciles.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(errors.clone()),
            Box::new(reconcile_duration.clone()),
            Box::new(stage.clone()),
            Box::new(toggle.clone()),
            Box::new(waiting_for_watermark.clone()),
            Box::new(handovers.clone()),
            Box::new(handover_duration.clone()),
            Box::new(leader.clone()),
        ] {
            registry
                .register(m)
                .expect("each metric is registered once");
        }
        Self {
            registry,
            reconciles,
            errors,
            reconcile_duration,
            stage,
            toggle,
            waiting_for_watermark,
            handovers,
            handover_duration,
            leader,
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|e| format!("# encoding failed: {e}\n"))
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}
