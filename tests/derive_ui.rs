//! trybuild UI tests of `#[derive(Reflect)]`: one compile-fail case per message a
//! user can see (`tests/ui/*.rs` + `.stderr`), and pass cases (`tests/ui/pass`);
//! and of the controller's typed keys (`tests/ui/controller_*.rs`: a mapper that
//! returns keys of another kind does not compile).

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
