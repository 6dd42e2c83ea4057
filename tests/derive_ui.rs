//! trybuild UI tests of `#[derive(Reflect)]`: one compile-fail case per message a
//! user can see (`tests/ui/*.rs` + `.stderr`), and pass cases (`tests/ui/pass`).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
