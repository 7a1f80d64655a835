//! The FlinkBlueGreenDeployment operator (see issue "Controller"): not built yet.
#![forbid(unsafe_code)]
