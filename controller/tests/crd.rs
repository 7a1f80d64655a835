//! The committed `deploy/crd.yaml` is exactly what the types generate.

use bluegreen_controller::resource::FlinkBlueGreenDeployment;
use kube::CustomResourceExt;

#[test]
fn committed_crd_matches_the_types() {
    let generated =
        serde_yaml::to_string(&FlinkBlueGreenDeployment::crd()).expect("CRD serialises");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crd.yaml");
    if std::env::var_os("BLUEGREEN_BLESS").is_some() {
        std::fs::write(path, &generated).expect("write deploy/crd.yaml");
    }
    let committed = std::fs::read_to_string(path).expect("deploy/crd.yaml");
    assert!(
        committed == generated,
        "deploy/crd.yaml is stale: run `cargo run -p bluegreen-controller -- crd > deploy/crd.yaml`"
    );
}

#[test]
fn crd_has_short_name_status_and_printer_columns() {
    let crd = FlinkBlueGreenDeployment::crd();
    assert_eq!(crd.spec.names.short_names, Some(vec!["fbgd".to_owned()]));
    let version = &crd.spec.versions[0];
    assert!(
        version
            .subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_some()
    );
    let columns: Vec<&str> = version
        .additional_printer_columns
        .iter()
        .flatten()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(columns, ["Active", "Stage", "W", "Ready", "Age"]);
}
