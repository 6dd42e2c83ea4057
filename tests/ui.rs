//! trybuild UI tests, both suites in one trybuild project, so that cargo builds the
//! dependencies of their cases once:
//! - `#[derive(Reflect)]`: one compile-fail case per message a user can see
//!   (`tests/ui/*.rs` + `.stderr`), and pass cases (`tests/ui/pass`); and the
//!   controller's typed keys (`tests/ui/controller_*.rs`: a mapper that returns keys
//!   of another kind does not compile);
//! - the webhooks' typed registration (feature `webhooks`): a kind registered for a
//!   hook it does not implement, a hook with a wrong signature, and a spoke converting
//!   to another hub each fail to compile with one message at the user's token
//!   (`tests/ui/webhooks/*.rs` + `.stderr`).

#[test]
fn derive_and_webhooks_ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
    t.compile_fail("tests/ui/webhooks/*.rs");
}
