//! A PostgreSQL test that cannot run says so where a developer sees it: past libtest's output
//! capture, which swallows `eprintln!` of a test that passes.

use std::process::Command;

use contract_tests::postgres_skip::POSTGRES_ENV;
use contract_tests::process::{Backend, TestDatabase};

/// Set in the child run, where the test plays the skipped PostgreSQL test.
const PROBE: &str = "BANKD_POSTGRES_SKIP_PROBE";
const NAME: &str = "a_postgres_test_without_a_server_warns_past_the_output_capture";

#[test]
fn a_postgres_test_without_a_server_warns_past_the_output_capture() {
    if std::env::var_os(PROBE).is_some() {
        assert!(
            TestDatabase::create(Backend::Postgres, "skip probe").is_none(),
            "no PostgreSQL configured, so no database"
        );
        return;
    }
    // This very test again, alone, captured as usual (no --nocapture), without the server URL.
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", NAME, "--test-threads=1"])
        .env(PROBE, "1")
        .env_remove(POSTGRES_ENV)
        .output()
        .expect("the test binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran the probe:\n{stdout}"
    );
    assert!(
        stderr.contains("!!! NOT RUN on PostgreSQL: skip probe"),
        "the skip is not visible on stderr:\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("WARNING: {POSTGRES_ENV} is not set")),
        "no banner on stderr:\n{stderr}"
    );
}
