//! One Event store, two API views, as on a real API server: every core/v1 Event is also an
//! events.k8s.io/v1 Event and the other way round (Kubernetes' `pkg/apis/events/v1`
//! conversion: `involvedObject` ↔ `regarding`, `message` ↔ `note`, `source` ↔
//! `deprecatedSource`, `count`/`firstTimestamp`/`lastTimestamp` ↔ `deprecated*`,
//! `reportingComponent` ↔ `reportingController`; the rest by name).
//!
//! The server keeps a converted copy in the other view's storage, written together with each
//! change (same name, namespace and uid; its own resourceVersion; the store's `Inner::commit`
//! writes it), so a watch, list or field selector on either API sees every Event.

use k8s_openapi::api::core::v1::{Event as CoreEvent, ObjectReference};
use k8s_openapi::api::events::v1::{Event, EventSeries};
use serde_json::Value;

use super::resources::GroupResource;

const EVENTS_GROUP: &str = "events.k8s.io";

/// Why an Event could not be shown in the other view.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConversionError {
    #[error("stored {view} Event does not decode: {source}")]
    Decode {
        view: &'static str,
        source: serde_json::Error,
    },
    #[error("converted Event does not encode: {0}")]
    Encode(serde_json::Error),
}

/// The two views of the Event store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum View {
    Core,
    Events,
}

impl View {
    /// The view `gr` is, if it is one of the two Event resources.
    pub fn of(gr: &GroupResource) -> Option<Self> {
        match (gr.group.as_str(), gr.resource.as_str()) {
            ("", "events") => Some(Self::Core),
            (EVENTS_GROUP, "events") => Some(Self::Events),
            _ => None,
        }
    }

    /// The other view.
    pub fn other(self) -> Self {
        match self {
            Self::Core => Self::Events,
            Self::Events => Self::Core,
        }
    }

    /// The view's resource.
    pub fn gr(self) -> GroupResource {
        match self {
            Self::Core => GroupResource::new("", "events"),
            Self::Events => GroupResource::new(EVENTS_GROUP, "events"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Core => "core/v1",
            Self::Events => "events.k8s.io/v1",
        }
    }
}

/// `stored` (an Event of `from`) as the other view's Event.
pub(crate) fn convert(from: View, stored: &Value) -> Result<Value, ConversionError> {
    let decode = |source| ConversionError::Decode {
        view: from.name(),
        source,
    };
    match from {
        View::Core => {
            let e: CoreEvent = serde_json::from_value(stored.clone()).map_err(decode)?;
            serde_json::to_value(core_to_events(e))
        }
        View::Events => {
            let e: Event = serde_json::from_value(stored.clone()).map_err(decode)?;
            serde_json::to_value(events_to_core(e))
        }
    }
    .map_err(ConversionError::Encode)
}

fn events_to_core(e: Event) -> CoreEvent {
    CoreEvent {
        metadata: e.metadata,
        involved_object: e.regarding.unwrap_or_default(),
        related: e.related,
        reason: e.reason,
        message: e.note,
        type_: e.type_,
        action: e.action,
        event_time: e.event_time,
        series: e.series.map(|s| k8s_openapi::api::core::v1::EventSeries {
            count: Some(s.count),
            last_observed_time: Some(s.last_observed_time),
        }),
        reporting_component: e.reporting_controller,
        reporting_instance: e.reporting_instance,
        source: e.deprecated_source,
        count: e.deprecated_count,
        first_timestamp: e.deprecated_first_timestamp,
        last_timestamp: e.deprecated_last_timestamp,
    }
}

fn core_to_events(e: CoreEvent) -> Event {
    let regarding = (e.involved_object != ObjectReference::default()).then_some(e.involved_object);
    Event {
        metadata: e.metadata,
        regarding,
        related: e.related,
        reason: e.reason,
        note: e.message,
        type_: e.type_,
        action: e.action,
        event_time: e.event_time,
        series: e.series.and_then(|s| {
            Some(EventSeries {
                count: s.count?,
                last_observed_time: s.last_observed_time?,
            })
        }),
        reporting_controller: e.reporting_component,
        reporting_instance: e.reporting_instance,
        deprecated_source: e.source,
        deprecated_count: e.count,
        deprecated_first_timestamp: e.first_timestamp,
        deprecated_last_timestamp: e.last_timestamp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_map_both_ways() {
        let events = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "n", "uid": "u"},
            "regarding": {"kind": "Pod", "name": "p"},
            "note": "hi", "reason": "R", "type": "Normal", "action": "A",
            "reportingController": "c", "reportingInstance": "i",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
        });
        let core = convert(View::Events, &events).expect("to core");
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["reportingComponent"], "c");
        assert_eq!(core["series"]["count"], 2);
        assert_eq!(core["metadata"]["uid"], "u");
        let back = convert(View::Core, &core).expect("back");
        assert_eq!(back, events);
    }
}
