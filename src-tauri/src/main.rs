//! The PhoneAgent desktop app binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    phoneagent_app::run();
}
