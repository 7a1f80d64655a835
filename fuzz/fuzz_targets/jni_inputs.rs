//! What the JNI entry points read from Java, through the functions they call
//! (`bluegreen_gate_jni::inputs`, `Watches`, `NativeGate`, `state_json`), without a JVM.
//!
//! Input: text lines. Line 1: `newGate`'s color. Line 2: `offer`'s JSON (the ConfigMap data).
//! Line 3: `awaitState`'s `sinceRevision` and `timeoutMs` and `decideBatch`'s `count`, as
//! integers separated by spaces. Every further line: an event time.
//!
//! Checked: nothing panics; a batch decides exactly `batch_count` records, as many as the
//! arrays allow, and each as `decide` does one by one; accepted data comes back from
//! `state_json` verbatim; releasing a handle twice is an error, not a crash.
#![no_main]

use bluegreen_gate_jni::{AcceptedData, NativeGate, Watches, inputs, state_json};
use bluegreen_protocol::Color;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let text = String::from_utf8_lossy(bytes);
    let mut lines = text.lines();
    let color = inputs::color(lines.next().unwrap_or_default()).unwrap_or(Color::Blue);
    let json = lines.next().unwrap_or_default();
    let numbers: Vec<i64> = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    let times: Vec<i64> = lines.map(|l| l.parse().unwrap_or(i64::MIN)).collect();
    let number = |i: usize| numbers.get(i).copied().unwrap_or(0);
    let _ = inputs::await_arguments(number(0), number(1));

    let watches = Watches::new();
    let handle = watches.open_manual("fuzz");
    let offered = inputs::offered_data(json);
    let accepted = watches.offer(handle.id(), json);
    assert_eq!(
        offered.is_ok(),
        accepted.is_ok(),
        "offer parses as offered_data"
    );
    if let (Ok(true), Ok(data)) = (&accepted, &offered) {
        let current = handle.shared().accepted_data().borrow().clone();
        let (revision, seen) = current.expect("accepted data is kept");
        assert_eq!(&*seen, data, "the accepted data is the offered data");
        let body: serde_json::Value = serde_json::from_str(&state_json(&AcceptedData {
            revision,
            data: seen,
        }))
        .expect("state_json is JSON");
        let echoed: std::collections::BTreeMap<String, String> =
            serde_json::from_value(body["configmap"].clone()).expect("an object of strings");
        assert_eq!(&echoed, data, "state_json carries the data verbatim");
    }

    let mut gate = NativeGate::new(&handle, color);
    let length = i32::try_from(times.len()).unwrap_or(i32::MAX);
    let out_length = i32::try_from(number(3).clamp(0, i64::from(i32::MAX))).unwrap_or(0);
    let count = inputs::batch_count(
        i32::try_from(number(2).clamp(i64::from(i32::MIN), i64::from(i32::MAX))).unwrap_or(0),
        length,
        out_length,
    );
    assert!(count <= times.len() && count <= usize::try_from(out_length).unwrap_or(0));
    let batch = gate
        .decide_batch_with(count, |scratch| {
            scratch.copy_from_slice(&times[..count]);
            Ok(())
        })
        .expect("filling from a slice cannot fail")
        .to_vec();
    assert_eq!(
        batch.len(),
        count,
        "a batch decides every record it is given"
    );
    for (t, decided) in times.iter().zip(&batch) {
        assert_eq!(gate.decide(*t) as i8, *decided, "t = {t}");
    }
    assert!(watches.release(handle.id()).is_ok());
    assert!(watches.release(handle.id()).is_err(), "released twice");
});
