//! The bluegreen gate (see issue "Gate crate"): not built yet.
#![forbid(unsafe_code)]
