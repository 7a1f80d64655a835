//! The JNI entry points of `io.bluegreen.gate.JniNative` (all `static native`).
//!
//! Every entry runs its body through `guarded`: an error or a panic becomes a Java exception
//! (`IllegalArgumentException` for bad arguments, `IllegalStateException` for closed handles,
//! `RuntimeException` otherwise) and the entry returns a neutral value, which Java never sees
//! because the exception is pending. No panic unwinds into the JVM.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, PoisonError};

use jni::JNIEnv;
use jni::objects::{JByteArray, JClass, JLongArray, JString};
use jni::sys::{JNI_FALSE, JNI_TRUE, jboolean, jint, jlong, jstring};

use crate::error::Error;
use crate::inputs;
use crate::native_gate::NativeGate;
use crate::watches::{Watches, state_json};

/// Runs `body`, turning a panic into [`Error::Panic`]. The part of the boundary that needs no
/// JVM, so that it can be unit-tested.
pub fn catch_panic<R>(body: impl FnOnce() -> Result<R, Error>) -> Result<R, Error> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(ToString::to_string)
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Err(Error::Panic(message))
        }
    }
}

/// The Java exception class an error becomes.
pub fn exception_class(error: &Error) -> &'static str {
    match error {
        Error::Json(_) | Error::Color(_) => "java/lang/IllegalArgumentException",
        Error::UnknownHandle(_) | Error::NotManual(_) => "java/lang/IllegalStateException",
        Error::Runtime(_)
        | Error::Kube(_)
        | Error::HomeKubeconfig { .. }
        | Error::Jni(_)
        | Error::Panic(_) => "java/lang/RuntimeException",
    }
}

/// Runs an entry point's body under [`catch_panic`]; on an error throws it into the JVM (unless
/// a Java exception is already pending) and returns `neutral`.
fn guarded<'local, R>(
    env: &mut JNIEnv<'local>,
    neutral: R,
    body: impl FnOnce(&mut JNIEnv<'local>) -> Result<R, Error>,
) -> R {
    match catch_panic(|| body(env)) {
        Ok(value) => value,
        Err(error) => {
            if !env.exception_check().unwrap_or(false) {
                // If throwing fails there is nothing better to do: the JVM is unusable.
                let _ = env.throw_new(exception_class(&error), error.to_string());
            }
            neutral
        }
    }
}

fn string(env: &mut JNIEnv<'_>, value: &JString<'_>) -> Result<String, Error> {
    Ok(env.get_string(value)?.into())
}

/// The gate behind a pointer Java holds.
fn native_gate<'a>(pointer: jlong) -> Result<&'a Mutex<NativeGate>, Error> {
    if pointer == 0 {
        return Err(Error::UnknownHandle(pointer));
    }
    // SAFETY: a non-zero `pointer` comes from `Box::into_raw` in `newGate` and stays valid until
    // `closeGate`; `JniGate` zeroes its copy under its lock before calling `closeGate`, and never
    // passes a pointer it closed. The mutex makes concurrent use from several threads sound.
    Ok(unsafe { &*(pointer as *const Mutex<NativeGate>) })
}

/// `long openConfigMap(String namespace, String name)`: a handle on the process's watch of that
/// ConfigMap (started on first use).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_openConfigMap<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    namespace: JString<'local>,
    name: JString<'local>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let namespace = string(env, &namespace)?;
        let name = string(env, &name)?;
        Ok(Watches::global().open_configmap(&namespace, &name)?.id())
    })
}

/// `long openManual(String name)`: a handle on a watch fed only by `offer` (tests, benchmarks).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_openManual<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    name: JString<'local>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let name = string(env, &name)?;
        Ok(Watches::global().open_manual(&name).id())
    })
}

/// `boolean offer(long watch, String json)`: feeds ConfigMap data to a manual watch.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_offer<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    watch: jlong,
    json: JString<'local>,
) -> jboolean {
    guarded(&mut env, JNI_FALSE, |env| {
        let json = string(env, &json)?;
        let accepted = Watches::global().offer(watch, &json)?;
        Ok(if accepted { JNI_TRUE } else { JNI_FALSE })
    })
}

/// `String awaitState(long watch, long sinceRevision, long timeoutMs)`: the sidecar's JSON body
/// for the last accepted data once its revision differs from `sinceRevision` (0: any), or
/// `null` after the timeout or when the handle is released.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_awaitState<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    watch: jlong,
    since_revision: jlong,
    timeout_ms: jlong,
) -> jstring {
    guarded(&mut env, std::ptr::null_mut(), |env| {
        let (since, timeout) = inputs::await_arguments(since_revision, timeout_ms);
        match Watches::global().await_data(watch, since, timeout)? {
            Some(accepted) => Ok(env.new_string(state_json(&accepted))?.into_raw()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// `void release(long watch)`: releases a watch handle (the watch stops with its last one).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_release<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    watch: jlong,
) {
    guarded(&mut env, (), |_| Watches::global().release(watch));
}

/// `long newGate(long watch, String color)`: a Rust gate of that color over the watch's state.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_newGate<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    watch: jlong,
    color: JString<'local>,
) -> jlong {
    guarded(&mut env, 0, |env| {
        let color = inputs::color(&string(env, &color)?)?;
        let handle = Watches::global().handle(watch)?;
        let gate = Box::new(Mutex::new(NativeGate::new(&handle, color)));
        Ok(Box::into_raw(gate) as jlong)
    })
}

/// `int decide(long gate, long eventTimeMs)`: the decision's ordinal (0 PASS, 1 DROP, 2 HOLD).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_decide<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    gate: jlong,
    event_time_ms: jlong,
) -> jint {
    guarded(&mut env, 2, |_| {
        let gate = native_gate(gate)?;
        let decision = gate
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .decide(event_time_ms);
        Ok(jint::from(decision as u8))
    })
}

/// `int decideBatch(long gate, long[] eventTimes, int count, byte[] out)`: decides the first
/// `count` event times into `out` (ordinals) and returns how many it decided.
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_decideBatch<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    gate: jlong,
    event_times: JLongArray<'local>,
    count: jint,
    out: JByteArray<'local>,
) -> jint {
    guarded(&mut env, 0, |env| {
        let gate = native_gate(gate)?;
        let count = inputs::batch_count(
            count,
            env.get_array_length(&event_times)?,
            env.get_array_length(&out)?,
        );
        let mut gate = gate.lock().unwrap_or_else(PoisonError::into_inner);
        let decided = gate.decide_batch_with(count, |times| {
            Ok(env.get_long_array_region(&event_times, 0, times)?)
        })?;
        env.set_byte_array_region(&out, 0, decided)?;
        // `count` is at most an array's length, itself a jint.
        Ok(jint::try_from(count).unwrap_or(jint::MAX))
    })
}

/// `void closeGate(long gate)`: frees a gate made by `newGate` (Java calls it once).
#[unsafe(no_mangle)]
pub extern "system" fn Java_io_bluegreen_gate_JniNative_closeGate<'local>(
    mut env: JNIEnv<'local>,
    _class: JClass<'local>,
    gate: jlong,
) {
    guarded(&mut env, (), |_| {
        if gate == 0 {
            return Err(Error::UnknownHandle(gate));
        }
        // SAFETY: `gate` comes from `Box::into_raw` in `newGate`; `JniGate.close` calls this at
        // most once per gate, after which it never uses the pointer again.
        drop(unsafe { Box::from_raw(gate as *mut Mutex<NativeGate>) });
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_with_its_message() {
        let result: Result<(), Error> = catch_panic(|| panic!("boom {}", 42));
        assert!(matches!(result, Err(Error::Panic(message)) if message == "boom 42"));
        let result: Result<(), Error> = catch_panic(|| std::panic::panic_any(7_u8));
        assert!(matches!(result, Err(Error::Panic(_))));
    }

    #[test]
    fn errors_map_to_the_java_exception_a_caller_expects() {
        assert_eq!(
            exception_class(&Error::Color("RED".into())),
            "java/lang/IllegalArgumentException"
        );
        assert_eq!(
            exception_class(&Error::UnknownHandle(3)),
            "java/lang/IllegalStateException"
        );
        assert_eq!(
            exception_class(&Error::Panic("x".into())),
            "java/lang/RuntimeException"
        );
    }

    #[test]
    fn a_null_gate_pointer_is_an_error_not_a_crash() {
        assert!(matches!(native_gate(0), Err(Error::UnknownHandle(0))));
    }
}
