//! A minimal `/openapi/v2` in its protobuf form (gnostic's `openapi.v2.Document`, the only
//! form kubectl 1.32 asks for): one definition per served kind and version, tagged with
//! `x-kubernetes-group-version-kind` and with no schema beyond that (any content is valid;
//! the server validates). kubectl reads it for client-side validation where
//! `/openapi/v3` does not decide, notably `kubectl apply -f` of a `kind: List`, which it
//! validates item by item against these definitions.

use prost::Message;

use super::resources::Registry;

/// The media type of the answer (kubectl asks for `...spec.v2@v1.0+protobuf`, which Go's
/// `mime` does not parse back).
pub(crate) const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The fields of gnostic's `openapi.v2` messages this document uses, by their field numbers.
#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "2")]
    info: Option<Info>,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, Message)]
struct Info {
    #[prost(string, tag = "1")]
    title: String,
    #[prost(string, tag = "2")]
    version: String,
}

#[derive(Clone, PartialEq, Message)]
struct Paths {}

#[derive(Clone, PartialEq, Message)]
struct Definitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSchema {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Schema {
    #[prost(string, tag = "4")]
    description: String,
    #[prost(message, repeated, tag = "31")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedAny {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
struct Any {
    #[prost(string, tag = "2")]
    yaml: String,
}

/// `GET /openapi/v2` as protobuf.
pub(crate) fn document(registry: &Registry) -> Vec<u8> {
    let mut definitions = Vec::new();
    for t in registry.all() {
        for v in &t.versions {
            let group = if t.group.is_empty() { "core" } else { &t.group };
            definitions.push(NamedSchema {
                name: format!("{group}.{}.{}", v.name, t.kind),
                value: Some(Schema {
                    description: format!("{} (served without a schema)", t.kind),
                    vendor_extension: vec![NamedAny {
                        name: "x-kubernetes-group-version-kind".into(),
                        value: Some(Any {
                            yaml: format!(
                                "- group: \"{}\"\n  kind: {}\n  version: {}\n",
                                t.group, t.kind, v.name
                            ),
                        }),
                    }],
                }),
            });
        }
    }
    Document {
        swagger: "2.0".into(),
        info: Some(Info {
            title: "bluegreen-local-apiserver".into(),
            version: "v1".into(),
        }),
        paths: Some(Paths {}),
        definitions: Some(Definitions {
            additional_properties: definitions,
        }),
    }
    .encode_to_vec()
}
