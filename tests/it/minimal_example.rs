//! The minimal controller example stays as short as its promise: the controller
//! part of `examples/minimal_controller.rs` (imports, reconcile, main — not the
//! embedded-server switch below it) fits in 22 non-blank lines and 5 `use` lines,
//! kube-runtime's smallest controller being 22 and 5.

#[test]
fn minimal_controller_fits_in_22_lines_and_5_uses() {
    let text = include_str!("../../examples/minimal_controller.rs");
    let (controller, _embedded) = text
        .split_once("/// Not part of the controller")
        .expect("the example marks where the embedded-server switch starts");
    let code: Vec<&str> = controller
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    let uses = code.iter().filter(|l| l.starts_with("use ")).count();
    assert!(
        code.len() <= 22,
        "{} lines:\n{}",
        code.len(),
        code.join("\n")
    );
    assert!(uses <= 5, "{uses} use lines");
    assert!(code.iter().any(|l| l.contains(".shutdown_on_signal()")));
}
