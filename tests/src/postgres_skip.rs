//! The loud warning for a PostgreSQL test that did not run.
//!
//! Shared by this crate and bankd's own integration tests (which include this file by path:
//! it needs only `std`, and a dependency of the server's tests on the black-box crate would be
//! the wrong way round).

/// The environment variable naming the PostgreSQL server for tests.
pub const POSTGRES_ENV: &str = "BANKD_TEST_POSTGRES_URL";

/// Says that `test` did not run on PostgreSQL, with a banner the first time in a process.
///
/// Written straight to the process's stderr: libtest captures `eprintln!` of passing tests, and
/// this warning must be seen precisely when everything "passes".
pub fn warn_postgres_skipped(test: &str) {
    use std::io::Write;
    static BANNER: std::sync::Once = std::sync::Once::new();
    let mut stderr = std::io::stderr().lock();
    BANNER.call_once(|| {
        let _ = writeln!(
            stderr,
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             !!! WARNING: {POSTGRES_ENV} is not set: the PostgreSQL variants of these tests\n\
             !!! DO NOT RUN (they return early). Set it, e.g.\n\
             !!!   {POSTGRES_ENV}=postgres://postgres@127.0.0.1:5432/postgres\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
        );
    });
    let _ = writeln!(stderr, "!!! NOT RUN on PostgreSQL: {test}");
}
