//! Integration tests of the run store (SPEC T1, T2, U5, U6), on real SQLite files.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is a test failure

mod basics;
mod crash;
mod export;
mod fixture;
