//! The generated contract is enforced by the compiler: each file under `ui/fail/` must fail
//! to build with the error committed beside it (`TRYBUILD=overwrite` to refresh after a
//! deliberate change of rustc's wording).

#[test]
fn contract_violations_do_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/fail/*.rs");
}
