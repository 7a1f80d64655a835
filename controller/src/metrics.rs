//! Prometheus metrics of the controller, registered once.

use bluegreen_protocol::{Color, Stage};
use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

use crate::resource::{FlinkBlueGreenDeploymentStatus, Outcome, TransitionRecord};

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
    /// `bluegreen_controller_gates_holding{namespace,name}`: 1 while `Degraded` is `True` with
    /// reason `GatesHolding` (the active job's gates hold every record or report a problem).
    pub gates_holding: IntGaugeVec,
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
        let stage = gauges(
            "bluegreen_controller_stage",
            "Coordination stage per deployment (1 = current)",
            &["namespace", "name", "stage"],
        );
        let toggle = gauges(
            "bluegreen_controller_watermark_toggle_value",
            "W of the handover in progress (epoch ms)",
            &["namespace", "name"],
        );
        let waiting_for_watermark = gauges(
            "bluegreen_controller_waiting_for_watermark",
            "1 while the handover waits for this job's gate watermark to pass W",
            &["namespace", "name", "color"],
        );
        let gates_holding = gauges(
            "bluegreen_controller_gates_holding",
            "1 while the active job's gates hold every record or report a problem (Degraded/GatesHolding)",
            &["namespace", "name"],
        );
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
        let leader = gauges(
            "bluegreen_controller_leader",
            "1 while this replica holds the lease",
            &["identity"],
        );
        for m in [
            Box::new(reconciles.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(errors.clone()),
            Box::new(reconcile_duration.clone()),
            Box::new(stage.clone()),
            Box::new(toggle.clone()),
            Box::new(waiting_for_watermark.clone()),
            Box::new(gates_holding.clone()),
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
            gates_holding,
            handovers,
            handover_duration,
            leader,
        }
    }

    /// Sets the gauges of the resource `namespace/name` from its written `status`.
    pub fn status_written(
        &self,
        namespace: &str,
        name: &str,
        status: &FlinkBlueGreenDeploymentStatus,
    ) {
        for stage in Stage::ALL {
            self.stage
                .with_label_values(&[namespace, name, stage.as_str()])
                .set(i64::from(status.stage == Some(*stage)));
        }
        let toggle = status.transition.as_ref().and_then(|t| t.toggle);
        self.toggle
            .with_label_values(&[namespace, name])
            .set(toggle.unwrap_or(0));
        for color in Color::ALL {
            let waiting = status
                .transition
                .as_ref()
                .is_some_and(|t| t.waiting_for_watermarks.iter().any(|w| w.color == *color));
            self.waiting_for_watermark
                .with_label_values(&[namespace, name, color.as_str()])
                .set(i64::from(waiting));
        }
        let holding = status.conditions.iter().any(|c| {
            c.type_ == crate::conditions::ConditionType::Degraded.as_str()
                && c.status == "True"
                && c.reason == crate::conditions::Reason::GatesHolding.as_str()
        });
        self.gates_holding
            .with_label_values(&[namespace, name])
            .set(i64::from(holding));
    }

    /// Counts a finished handover; called once its record is in a written status.
    pub fn handover_finished(&self, record: &TransitionRecord) {
        self.handovers
            .with_label_values(&[record.outcome.as_str()])
            .inc();
        if record.outcome == Outcome::Promoted {
            self.handover_duration.observe(record.duration_seconds);
        }
    }

    /// Removes every series of the resource `namespace/name` (it was deleted).
    pub fn forget(&self, namespace: &str, name: &str) {
        // A series that was never set is not there to remove: nothing to do.
        for stage in Stage::ALL {
            let _ = self
                .stage
                .remove_label_values(&[namespace, name, stage.as_str()]);
        }
        let _ = self.toggle.remove_label_values(&[namespace, name]);
        let _ = self.gates_holding.remove_label_values(&[namespace, name]);
        for color in Color::ALL {
            let _ =
                self.waiting_for_watermark
                    .remove_label_values(&[namespace, name, color.as_str()]);
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|e| format!("# encoding failed: {e}\n"))
    }
}

/// A gauge family `name` with `help` and `labels`.
fn gauges(name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    IntGaugeVec::new(Opts::new(name, help), labels).expect("valid metric")
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use bluegreen_protocol::{Color, Stage};

    use super::Metrics;
    use crate::resource::{
        FlinkBlueGreenDeploymentStatus, MicroTime, Outcome, Phase, Transition, TransitionRecord,
        WatermarkWait,
    };

    fn status() -> FlinkBlueGreenDeploymentStatus {
        FlinkBlueGreenDeploymentStatus {
            stage: Some(Stage::Transitioning),
            transition: Some(Transition {
                from: Some(Color::Blue),
                to: Color::Green,
                epoch: 1,
                template_hash: "h2".into(),
                generation: 2,
                redeploy_nonce: None,
                phase: Phase::ToggleSet,
                toggle: Some(70_000),
                savepoint_trigger_id: None,
                restore_path: None,
                savepoint_attempts: 0,
                started_at: MicroTime("2026-01-01T00:00:00Z".parse().unwrap()),
                phase_started_at: MicroTime("2026-01-01T00:00:00Z".parse().unwrap()),
                abort_reason: None,
                stop: crate::resource::OutgoingStop::default(),
                waiting_for_watermarks: vec![WatermarkWait {
                    color: Color::Green,
                    watermark: None,
                    toggle: 70_000,
                }],
                past_w_by_idleness: Vec::new(),
                forward_repair: None,
                incoming_ready: None,
                outgoing_ready: None,
                outgoing_restart: None,
                outgoing_gates: std::collections::BTreeMap::new(),
                incoming_cluster_down_since: None,
            }),
            ..FlinkBlueGreenDeploymentStatus::default()
        }
    }

    fn series_of(metrics: &Metrics, name: &str) -> Vec<String> {
        metrics
            .render()
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains(&format!("name=\"{name}\"")))
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn a_written_status_sets_the_gauges_and_deletion_removes_every_series_of_that_resource() {
        let metrics = Metrics::new();
        metrics.status_written("ns", "orders", &status());
        metrics.status_written("ns", "payments", &status());
        let text = metrics.render();
        assert!(
            text.contains(r#"bluegreen_controller_stage{name="orders",namespace="ns",stage="TRANSITIONING"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(
                r#"bluegreen_controller_watermark_toggle_value{name="orders",namespace="ns"} 70000"#
            ),
            "{text}"
        );
        assert!(
            text.contains(r#"bluegreen_controller_waiting_for_watermark{color="GREEN",name="orders",namespace="ns"} 1"#),
            "{text}"
        );
        // stage × 5, toggle, waiting × 2, gates holding.
        assert_eq!(series_of(&metrics, "orders").len(), Stage::ALL.len() + 4);
        metrics.forget("ns", "orders");
        assert_eq!(series_of(&metrics, "orders"), Vec::<String>::new());
        assert_eq!(
            series_of(&metrics, "payments").len(),
            Stage::ALL.len() + 4,
            "another resource's series stay"
        );
        metrics.forget("ns", "never-seen");
    }

    #[test]
    fn gates_holding_follows_the_degraded_condition() {
        let metrics = Metrics::new();
        let mut status = FlinkBlueGreenDeploymentStatus::default();
        let holding = |m: &Metrics| m.gates_holding.with_label_values(&["ns", "orders"]).get();
        metrics.status_written("ns", "orders", &status);
        assert_eq!(holding(&metrics), 0);
        let mut health = crate::conditions::Health::default();
        health.degraded(crate::conditions::Reason::GatesHolding, "no state".into());
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        crate::conditions::update(&mut status.conditions, &health, None, 1, now);
        metrics.status_written("ns", "orders", &status);
        assert_eq!(holding(&metrics), 1);
    }

    #[test]
    fn a_finished_handover_is_counted_by_outcome_and_a_promotion_timed() {
        let metrics = Metrics::new();
        let record = |outcome: Outcome| TransitionRecord {
            epoch: 1,
            from: Some(Color::Blue),
            to: Color::Green,
            toggle: Some(70_000),
            outcome,
            reason: None,
            past_w_by_idleness: Vec::new(),
            forward_repair: None,
            started_at: MicroTime("2026-01-01T00:00:00Z".parse().unwrap()),
            finished_at: MicroTime("2026-01-01T00:01:00Z".parse().unwrap()),
            duration_seconds: 60.0,
        };
        metrics.handover_finished(&record(Outcome::Promoted));
        metrics.handover_finished(&record(Outcome::Aborted));
        assert_eq!(metrics.handovers.with_label_values(&["Promoted"]).get(), 1);
        assert_eq!(metrics.handovers.with_label_values(&["Aborted"]).get(), 1);
        assert_eq!(metrics.handover_duration.get_sample_count(), 1);
        assert!((metrics.handover_duration.get_sample_sum() - 60.0).abs() < f64::EPSILON);
    }
}
