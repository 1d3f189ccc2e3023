//! The app binary itself (SPEC U1): a data directory that cannot be opened ends the process
//! with status 1 and a message naming the problem, before any window is made (so this runs
//! without a display).
//!
//! This file is also why `cargo test --no-run --workspace` (scripts/webdriver.sh) builds
//! `target/debug/phoneagent-app`: cargo builds a package's binaries for its integration tests.

use std::process::Command;

#[test]
fn an_unusable_data_directory_is_a_clear_error_not_a_crash() {
    let dir = tempfile::tempdir().expect("temp dir");
    // PHONEAGENT_HOME names a regular file: the store cannot make its directory there.
    let not_a_dir = dir.path().join("home-is-a-file");
    std::fs::write(&not_a_dir, b"not a directory").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_phoneagent-app"))
        .env("PHONEAGENT_HOME", &not_a_dir)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("run the app binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr.contains("PhoneAgent could not start"),
        "no clear message; stderr: {stderr}"
    );
    assert!(
        stderr.contains("home-is-a-file"),
        "the message does not name the path; stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}
