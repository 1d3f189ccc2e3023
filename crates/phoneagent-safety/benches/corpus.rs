//! Corpus benchmark (being written by the safety engineer).
fn main() {}
