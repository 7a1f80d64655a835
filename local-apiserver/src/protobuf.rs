//! Request bodies in `application/vnd.kubernetes.protobuf`.
//!
//! kubectl 1.32 sends its typed writes (`kubectl create configmap|secret|namespace|
//! serviceaccount`) as protobuf and does not fall back to JSON on a 415, whatever the
//! discovery documents say. The body is the magic `k8s\0` followed by a `runtime.Unknown`
//! whose `raw` field holds the object. The object is decoded with the generated `k8s-pb`
//! types and turned into its JSON form through the `k8s-openapi` types, so the rest of the
//! server only ever sees JSON. Responses stay JSON (kubectl accepts
//! `application/vnd.kubernetes.protobuf,application/json`).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1 as json_core;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as json_meta;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::Value;

use super::api_error::ApiError;
use super::protobuf_reviews;

/// The media type kubectl uses for protobuf bodies.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message.into())
}

/// Decodes a protobuf request body into the object's JSON form.
///
/// Kinds other than ConfigMap, Secret, Namespace and ServiceAccount answer 415 naming the
/// kind, so the client knows to send JSON (`kubectl apply` does).
pub(crate) fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| {
        bad("protobuf body does not start with the \"k8s\\0\" magic of a runtime.Unknown envelope")
    })?;
    let unknown = Unknown::decode(envelope)
        .map_err(|e| bad(format!("protobuf body is not a runtime.Unknown: {e}")))?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let what = |e: prost::DecodeError| bad(format!("protobuf {api_version} {kind}: {e}"));
    let object = match (api_version.as_str(), kind.as_str()) {
        ("v1", "ConfigMap") => {
            let pb = pb_core::ConfigMap::decode(raw.as_slice()).map_err(what)?;
            to_json(&json_core::ConfigMap {
                metadata: meta(pb.metadata),
                data: non_empty(pb.data),
                binary_data: non_empty(bytes(pb.binary_data)),
                immutable: pb.immutable,
            })
        }
        ("v1", "Secret") => {
            let pb = pb_core::Secret::decode(raw.as_slice()).map_err(what)?;
            to_json(&json_core::Secret {
                metadata: meta(pb.metadata),
                data: non_empty(bytes(pb.data)),
                string_data: non_empty(pb.string_data),
                type_: pb.r#type,
                immutable: pb.immutable,
            })
        }
        ("v1", "Namespace") => {
            let pb = pb_core::Namespace::decode(raw.as_slice()).map_err(what)?;
            to_json(&json_core::Namespace {
                metadata: meta(pb.metadata),
                spec: pb.spec.filter(|s| !s.finalizers.is_empty()).map(|s| {
                    json_core::NamespaceSpec {
                        finalizers: Some(s.finalizers),
                    }
                }),
                status: None,
            })
        }
        ("v1", "ServiceAccount") => {
            let pb = pb_core::ServiceAccount::decode(raw.as_slice()).map_err(what)?;
            to_json(&json_core::ServiceAccount {
                metadata: meta(pb.metadata),
                automount_service_account_token: pb.automount_service_account_token,
                image_pull_secrets: (!pb.image_pull_secrets.is_empty()).then(|| {
                    pb.image_pull_secrets
                        .into_iter()
                        .map(|r| json_core::LocalObjectReference {
                            name: r.name.unwrap_or_default(),
                        })
                        .collect()
                }),
                secrets: None,
            })
        }
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            to_json(&protobuf_reviews::access_review(&raw).map_err(what)?)
        }
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            to_json(&protobuf_reviews::identity_review(&raw).map_err(what)?)
        }
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "{CONTENT_TYPE} bodies are decoded for v1 ConfigMap, Secret, Namespace and ServiceAccount \
                     and the self reviews only, \
                     not {api_version} {kind}: send application/json (e.g. kubectl apply -f)"
                ),
            ));
        }
    };
    let mut object = object?;
    object["apiVersion"] = Value::from(api_version);
    object["kind"] = Value::from(kind);
    Ok(object)
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| bad(format!("protobuf body: {e}")))
}

fn non_empty<V>(map: BTreeMap<String, V>) -> Option<BTreeMap<String, V>> {
    (!map.is_empty()).then_some(map)
}

fn bytes(map: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, ByteString> {
    map.into_iter().map(|(k, v)| (k, ByteString(v))).collect()
}

/// The client-settable part of `ObjectMeta`; the server fills in the rest.
fn meta(pb: Option<pb_meta::ObjectMeta>) -> json_meta::ObjectMeta {
    let pb = pb.unwrap_or_default();
    json_meta::ObjectMeta {
        name: pb.name,
        generate_name: pb.generate_name,
        namespace: pb.namespace,
        resource_version: pb.resource_version,
        labels: non_empty(pb.labels),
        annotations: non_empty(pb.annotations),
        finalizers: (!pb.finalizers.is_empty()).then_some(pb.finalizers),
        owner_references: (!pb.owner_references.is_empty()).then(|| {
            pb.owner_references
                .into_iter()
                .map(|o| json_meta::OwnerReference {
                    api_version: o.api_version.unwrap_or_default(),
                    kind: o.kind.unwrap_or_default(),
                    name: o.name.unwrap_or_default(),
                    uid: o.uid.unwrap_or_default(),
                    controller: o.controller,
                    block_owner_deletion: o.block_owner_deletion,
                })
                .collect()
        }),
        ..json_meta::ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_pb::apimachinery::pkg::runtime::TypeMeta;

    fn envelope(kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let unknown = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some(kind.into()),
            }),
            raw: Some(raw),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        [MAGIC, &unknown.encode_to_vec()].concat()
    }

    #[test]
    fn config_map_round_trips_to_json() {
        let cm = pb_core::ConfigMap {
            metadata: Some(pb_meta::ObjectMeta {
                name: Some("demo".into()),
                labels: [("app".to_string(), "x".to_string())].into(),
                ..Default::default()
            }),
            data: [("k".to_string(), "v".to_string())].into(),
            binary_data: [("b".to_string(), vec![0u8, 1])].into(),
            immutable: None,
        };
        let v = decode(&envelope("ConfigMap", cm.encode_to_vec())).expect("decode");
        assert_eq!(
            v,
            serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "demo", "labels": {"app": "x"}},
                "data": {"k": "v"}, "binaryData": {"b": "AAE="},
            })
        );
    }

    #[test]
    fn unsupported_kind_and_bad_magic_are_named() {
        let err = decode(&envelope("Pod", Vec::new())).expect_err("pod");
        assert!(
            err.to_status()["message"]
                .as_str()
                .expect("message")
                .contains("v1 Pod")
        );
        let err = decode(b"{}").expect_err("json");
        assert!(
            err.to_status()["message"]
                .as_str()
                .expect("message")
                .contains("magic")
        );
    }
}
