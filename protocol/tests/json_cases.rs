//! Generates `protocol/vectors/json-cases.json`: JSON texts with what the Rust side makes of them,
//! for the Java gate's own `Json` parser to agree with (`jvm/.../JsonCasesTest.java`), and checks
//! that the committed file is exactly what is generated.
//!
//! Two kinds of case, both hand-written edge cases plus inputs from a fixed-seed generator
//! (random documents, then random edits of them and of the ConfigMaps of `configmaps.json`):
//! - `documents`: any JSON text, parsed by serde_json (RFC 8259, at most 127 levels of nesting,
//!   numbers within f64) with duplicate member names refused, as serde's derived structs and the
//!   Java parser do. `expect` is the value (numbers tagged `i:`/`u:` for exact integers, `f:`
//!   for binary64, objects as ordered member lists) or `"error"`.
//! - `configmaps`: the ConfigMap data a gate receives as a JSON object of strings (the sidecar's
//!   `configmap`, the JNI shim's offer), then `CoordinationState::from_data`: the state, the
//!   protocol error (kind and key), `"json"` when the text does not parse, or `"strings"` when it
//!   is not an object whose values are all strings.
//!
//! After an intended change: `BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test
//! json_cases`, then review the diff.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::path::PathBuf;

use bluegreen_protocol::CoordinationState;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

/// A JSON value as the Rust side reads it: serde_json's grammar and limits, member order kept,
/// duplicate names refused.
#[derive(Debug, Clone, PartialEq)]
enum Strict {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Strict>),
    Object(Vec<(String, Strict)>),
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Strict, E> {
        serde_json::Number::from_f64(v)
            .map(Strict::Number)
            .ok_or_else(|| E::custom("not a finite number"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Strict::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut members: Vec<(String, Strict)> = Vec::new();
        let mut names = BTreeSet::new();
        while let Some(name) = map.next_key::<String>()? {
            if !names.insert(name.clone()) {
                return Err(de::Error::custom(format!("duplicate member {name:?}")));
            }
            members.push((name, map.next_value()?));
        }
        Ok(Strict::Object(members))
    }
}

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StrictVisitor)
    }
}

fn parse(text: &str) -> Option<Strict> {
    serde_json::from_str(text).ok()
}

/// The expected value in the case file.
fn encode(value: &Strict) -> Value {
    match value {
        Strict::Null => Value::Null,
        Strict::Bool(b) => json!(b),
        Strict::Number(n) => {
            let tagged = if let Some(u) = n.as_u64() {
                format!("u:{u}")
            } else if let Some(i) = n.as_i64() {
                format!("i:{i}")
            } else {
                format!("f:{:?}", n.as_f64().expect("a finite f64"))
            };
            json!({ "number": tagged })
        }
        Strict::String(s) => json!(s),
        Strict::Array(items) => Value::Array(items.iter().map(encode).collect()),
        Strict::Object(members) => json!({
            "object": members.iter().map(|(k, v)| json!([k, encode(v)])).collect::<Vec<_>>()
        }),
    }
}

/// What the Rust side makes of ConfigMap data sent as JSON.
fn configmap_expectation(text: &str) -> Value {
    let Some(value) = parse(text) else {
        return json!({ "error": "json" });
    };
    let Strict::Object(members) = value else {
        return json!({ "error": "strings" });
    };
    let mut data = BTreeMap::new();
    for (k, v) in members {
        let Strict::String(v) = v else {
            return json!({ "error": "strings" });
        };
        data.insert(k, v);
    }
    match CoordinationState::from_data(&data) {
        Ok(s) => json!({ "state": {
            "active": s.active.as_str(),
            "deletion_delay_ms": s.deletion_delay_ms.to_string(),
            "stage": s.stage.as_str(),
            "watermark_stage": s.toggle.stage().as_str(),
            "toggle": s.toggle.value().map(|w| w.to_string()),
            "epoch": s.epoch.to_string(),
            "floor": s.floor.map(|f| f.to_string()),
        }}),
        Err(e) => json!({ "error": { "kind": e.kind(), "key": e.key() } }),
    }
}

/// splitmix64: a fixed-seed generator, so that the file is the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % u64::try_from(n).expect("small")).expect("small")
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    fn word(&mut self, words: &[&'static str]) -> &'static str {
        words[self.below(words.len())]
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const NUMBERS: [&str; 24] = [
    "0",
    "-0",
    "1",
    "-1",
    "42",
    "0.5",
    "-0.0",
    "1e3",
    "1E-3",
    "2.5e+10",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "1e308",
    "1.7976931348623157e308",
    "4.9e-324",
    "1e-400",
    "0.1",
    "123456789012345678901234567890",
    "3.141592653589793238462643383279",
];

const ESCAPES: [&str; 8] = ["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"];
const UNICODE_ESCAPES: [&str; 4] = ["\\ud83d\\ude00", "\\uD834\\uDD1E", "\\u00e9", "\\u0000"];
const WORDS: [&str; 4] = ["active-deployment-type", "epoch", "BLUE", "GREEN"];

/// A random string literal: plain characters, escapes, `\u` escapes (surrogate pairs included)
/// and raw non-ASCII characters.
fn string(rng: &mut Rng) -> String {
    let mut s = String::from("\"");
    for _ in 0..rng.below(6) {
        match rng.below(9) {
            0 => s.push_str(rng.word(&ESCAPES)),
            1 => write!(s, "\\u{:04x}", rng.below(0x1_0000))
                .expect("writing to a String cannot fail"),
            2 => s.push_str(rng.word(&UNICODE_ESCAPES)),
            3 => s.push(*rng.pick(&['é', 'ß', '€', '😀', '\u{7f}', '\u{fffd}', '中'])),
            4 => s.push_str(rng.word(&WORDS)),
            _ => s.push(char::from(
                b'a' + u8::try_from(rng.below(26)).expect("a letter"),
            )),
        }
    }
    s.push('"');
    s
}

fn whitespace(rng: &mut Rng) -> &'static str {
    if rng.chance(70) {
        ""
    } else {
        rng.word(&[" ", "\n", "\t", "\r\n", "  "])
    }
}

/// A random document of at most `depth` levels, with random whitespace.
fn document(rng: &mut Rng, depth: usize) -> String {
    let kind = if depth == 0 {
        rng.below(4)
    } else {
        rng.below(6)
    };
    match kind {
        0 => (*rng.pick(&["null", "true", "false"])).to_owned(),
        1 => (*rng.pick(&NUMBERS)).to_owned(),
        2 | 3 => string(rng),
        4 => {
            let items: Vec<String> = (0..rng.below(4))
                .map(|_| {
                    format!(
                        "{}{}{}",
                        whitespace(rng),
                        document(rng, depth - 1),
                        whitespace(rng)
                    )
                })
                .collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let members: Vec<String> = (0..rng.below(4))
                .map(|_| {
                    format!(
                        "{}{}{}:{}{}",
                        whitespace(rng),
                        string(rng),
                        whitespace(rng),
                        whitespace(rng),
                        document(rng, depth - 1)
                    )
                })
                .collect();
            format!("{{{}}}", members.join(","))
        }
    }
}

/// `text` with one to three random edits: a character deleted, inserted (a JSON-significant
/// one, mostly), replaced, a slice repeated, or the end cut off.
fn mutate(rng: &mut Rng, text: &str) -> String {
    const INSERTS: [&str; 21] = [
        "{", "}", "[", "]", ",", ":", "\"", "\\", "-", "+", ".", "e", "0", "9", " ", "\u{1}", "n",
        "\\u", "\\ud800", "\u{feff}", "é",
    ];
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..=rng.below(3) {
        let at = rng.below(chars.len() + 1);
        match rng.below(5) {
            0 if at < chars.len() => {
                chars.remove(at);
            }
            1 => {
                let insert: Vec<char> = rng.pick(&INSERTS).chars().collect();
                chars.splice(at..at, insert);
            }
            2 if at < chars.len() => {
                let insert: Vec<char> = rng.pick(&INSERTS).chars().collect();
                chars.splice(at..=at, insert);
            }
            3 if at < chars.len() => {
                let end = (at + 1 + rng.below(8)).min(chars.len());
                let slice: Vec<char> = chars[at..end].to_vec();
                chars.splice(at..at, slice);
            }
            _ => chars.truncate(at),
        }
    }
    chars.into_iter().collect()
}

/// Edge cases of the grammar, written out.
fn hand_written_documents() -> Vec<String> {
    let mut docs: Vec<String> = [
        "",
        " ",
        "null",
        "true",
        "false",
        "nul",
        "True",
        "NULL",
        "0",
        "-0",
        "00",
        "01",
        "-01",
        "-",
        "+1",
        ".5",
        "1.",
        "1.e3",
        "1e",
        "1e+",
        "1E5",
        "-1.5e-7",
        "0x10",
        "Infinity",
        "NaN",
        "1e309",
        "-1e309",
        "1e-400",
        "\"\"",
        "\"a\"",
        "\"\\u0041\"",
        "\"\\u00\"",
        "\"\\u+041\"",
        "\"\\u-041\"",
        "\"\\u0G41\"",
        "\"\\u٠٠٤١\"",
        "\"\\ud800\"",
        "\"\\udc00\"",
        "\"\\ud800\\u0041\"",
        "\"\\ud800\\ud800\"",
        "\"\\udbff\\udfff\"",
        "\"\\ud83d\\ude00\"",
        "\"\\x41\"",
        "\"\\'\"",
        "\"\\a\"",
        "\"a\nb\"",
        "\"a\tb\"",
        "\"a\u{7f}b\"",
        "\"\u{1f}\"",
        "'a'",
        "\"unterminated",
        "[]",
        "[ ]",
        "[1,]",
        "[,1]",
        "[1 2]",
        "[1,,2]",
        "[[[]]]",
        "[",
        "]",
        "{}",
        "{ }",
        "{\"a\":1}",
        "{\"a\" : 1 , \"b\" : [true] }",
        "{\"a\":1,}",
        "{,\"a\":1}",
        "{\"a\"}",
        "{\"a\":}",
        "{a:1}",
        "{1:1}",
        "{\"a\":1 \"b\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":{\"b\":1,\"b\":1}}",
        "{\"\\u0061\":1,\"a\":2}",
        "{\"a\":1}x",
        "{\"a\":1}}",
        "[1] [2]",
        "\u{feff}{}",
        "{}\u{feff}",
        "\u{a0}1",
        "1\u{0}",
        " \t\r\n[ \t\r\n1 \t\r\n] \t\r\n",
        "[\u{b}1]",
        "{\"k\":\"v\",\"n\":null,\"o\":{},\"l\":[]}",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    for depth in [127, 128, 129, 130, 200] {
        docs.push(format!("{}{}", "[".repeat(depth), "]".repeat(depth)));
        docs.push(format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)));
        docs.push(format!("{}{}", "[".repeat(depth), "]".repeat(depth - 1)));
    }
    docs.push("[".repeat(10_000));
    docs
}

/// The ConfigMaps of `configmaps.json` as JSON texts.
fn vector_configmaps() -> Vec<String> {
    let path = vectors_dir().join("configmaps.json");
    let text = std::fs::read_to_string(&path).expect("configmaps.json");
    let document: Value = serde_json::from_str(&text).expect("JSON");
    document["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| serde_json::to_string(&c["configmap"]).expect("serialises"))
        .collect()
}

fn hand_written_configmaps(valid: &str) -> Vec<String> {
    vec![
        "[]".to_owned(),
        "\"epoch\"".to_owned(),
        "{}".to_owned(),
        "{\"epoch\": 7}".to_owned(),
        "{\"epoch\": null}".to_owned(),
        valid.replacen('{', "{\"epoch\":\"7\",", 1),
        valid.replacen('{', "{\"x-unknown\":{\"nested\":[1]},", 1),
        valid.replacen('{', "{\"x-unknown\":\"\\ud83d\\ude00\",", 1),
        valid.replacen('}', ",}", 1),
        valid.replace("\"1\"", "\"\\u0031\""),
        valid.replace("\"1\"", "\"\\u0661\""),
        valid
            .replace("BLUE", "BLU\\u0045")
            .replace("GREEN", "GRE\\u0045N"),
    ]
}

fn documents() -> Vec<Value> {
    let mut rng = Rng(0x0b1e_96ee_2026_0014);
    let mut inputs = hand_written_documents();
    let random: Vec<String> = (0..600).map(|_| document(&mut rng, 3)).collect();
    inputs.extend(random.iter().take(300).cloned());
    inputs.extend(random.iter().map(|d| mutate(&mut rng, d)));
    let mut seen = BTreeSet::new();
    inputs
        .into_iter()
        .filter(|input| seen.insert(input.clone()))
        .map(|input| {
            let expect = parse(&input).map_or_else(|| json!("error"), |v| encode(&v));
            json!({ "input": input, "expect": expect })
        })
        .collect()
}

fn configmaps() -> Vec<Value> {
    let mut rng = Rng(0xc0f1_96a9_2026_0014);
    let vectors = vector_configmaps();
    let valid = vectors
        .iter()
        .find(|t| configmap_expectation(t).get("state").is_some())
        .expect("a valid ConfigMap among the vectors")
        .clone();
    let mut inputs = vectors.clone();
    inputs.extend(hand_written_configmaps(&valid));
    for _ in 0..3 {
        inputs.extend(vectors.iter().map(|t| mutate(&mut rng, t)));
    }
    let mut seen = BTreeSet::new();
    inputs
        .into_iter()
        .filter(|input| seen.insert(input.clone()))
        .map(|input| json!({ "input": input, "expect": configmap_expectation(&input) }))
        .collect()
}

fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

fn cases_document() -> Value {
    json!({
        "description": "What the Rust side makes of JSON texts, for other parsers to agree with. `documents`: serde_json's grammar (RFC 8259, at most 127 levels of nesting, numbers within binary64) with duplicate member names refused; `expect` is \"error\" or the value, numbers as {\"number\": \"u:<u64>\" | \"i:<i64>\" | \"f:<binary64, shortest round-trip form>\"}, objects as {\"object\": [[name, value], ...]} in document order. `configmaps`: ConfigMap data as a JSON object of strings, then CoordinationState::from_data; `expect` is {\"state\": ...} (as in configmaps.json), {\"error\": {\"kind\", \"key\"}}, {\"error\": \"json\"} (not JSON) or {\"error\": \"strings\"} (not an object of strings).",
        "generated_by": "protocol/tests/json_cases.rs (BLUEGREEN_BLESS=1 cargo test -p bluegreen-protocol --test json_cases)",
        "documents": documents(),
        "configmaps": configmaps(),
    })
}

/// The document with one case per line (readable diffs at a third of the pretty form's size).
fn render(document: &Value) -> String {
    let line = |v: &Value| serde_json::to_string(v).expect("serialises");
    let mut out = String::from("{\n");
    for key in ["description", "generated_by"] {
        writeln!(out, "  {}: {},", line(&json!(key)), line(&document[key]))
            .expect("writing to a String cannot fail");
    }
    for (i, key) in ["documents", "configmaps"].into_iter().enumerate() {
        let cases: Vec<String> = document[key]
            .as_array()
            .expect("cases")
            .iter()
            .map(|c| format!("    {}", line(c)))
            .collect();
        let end = if i == 0 { "," } else { "" };
        writeln!(
            out,
            "  {}: [\n{}\n  ]{end}",
            line(&json!(key)),
            cases.join(",\n")
        )
        .expect("writing to a String cannot fail");
    }
    out.push_str("}\n");
    out
}

#[test]
fn committed_json_cases_are_generated() {
    let generated = cases_document();
    let path = vectors_dir().join("json-cases.json");
    let text = render(&generated);
    if std::env::var_os("BLUEGREEN_BLESS").is_some() {
        std::fs::write(&path, &text).expect("write json-cases.json");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; generate it with BLUEGREEN_BLESS=1",
            path.display()
        )
    });
    assert!(
        committed == text,
        "{} differs from what protocol/tests/json_cases.rs generates; run BLUEGREEN_BLESS=1 \
         cargo test -p bluegreen-protocol --test json_cases and review the diff",
        path.display()
    );
}

#[test]
fn the_cases_cover_both_verdicts_and_every_outcome() {
    let generated = cases_document();
    let documents = generated["documents"].as_array().expect("documents");
    let refused = documents.iter().filter(|c| c["expect"] == "error").count();
    assert!(documents.len() >= 700, "{} documents", documents.len());
    assert!(
        refused * 5 >= documents.len() && refused * 5 <= documents.len() * 4,
        "{refused} of {} documents refused: both verdicts should be common",
        documents.len()
    );
    let configmaps = generated["configmaps"].as_array().expect("configmaps");
    for outcome in ["state", "error"] {
        assert!(
            configmaps
                .iter()
                .any(|c| c["expect"].get(outcome).is_some()),
            "{outcome}"
        );
    }
    for error in ["json", "strings"] {
        assert!(
            configmaps.iter().any(|c| c["expect"]["error"] == error),
            "{error}"
        );
    }
}
