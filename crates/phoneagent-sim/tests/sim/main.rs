//! Integration tests of the virtual phone: the ADB protocol over raw TCP, Debian's stock `adb`
//! client, the apps' flows driven by taps at ground-truth element centres, faults, rendering.
// Test helpers outside #[test] fns panic on failure by design.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod apps;
mod apps_more;
mod common;
mod faults;
mod protocol;
mod render;
mod stock_adb;
mod streams;
mod timing;
