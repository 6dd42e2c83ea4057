//! trybuild UI tests of the webhooks' typed registration (feature `webhooks`): a kind
//! registered for a hook it does not implement, a hook with a wrong signature, and a
//! spoke converting to another hub each fail to compile with one message at the
//! user's token (`tests/ui/webhooks/*.rs` + `.stderr`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/webhooks/*.rs");
}
