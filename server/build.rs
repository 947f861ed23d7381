// The commit the binary is built from goes into `bankd_build_info` (src/metrics.rs):
// `BANKD_GIT_COMMIT` when the builder sets it (a package built outside a checkout), else
// `git rev-parse`, else `unknown`.
fn main() {
    println!("cargo:rerun-if-env-changed=BANKD_GIT_COMMIT");
    let commit = std::env::var("BANKD_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BANKD_GIT_COMMIT={commit}");
}

fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|s| s.trim().to_owned())
    };
    // Rebuild when HEAD moves (a commit, a checkout).
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(&["rev-parse", "--git-path", &reference])
    {
        println!("cargo:rerun-if-changed={path}");
    }
    git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| !c.is_empty())
}
