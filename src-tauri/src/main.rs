//! The PhoneAgent desktop app binary.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() {
    // Started as the app's virtual phone (its own process, issue #14): serve it and end.
    if let Some(code) = phoneagent_console::virtual_phone::run_child_if_asked() {
        std::process::exit(code);
    }
    // WebKitGTK's DMA-BUF renderer keeps a GPU-style buffer pipeline in the web process: about
    // 100 MB more (PSS 209 → 112 MB measured under Xvfb) for a UI that shows a few images, and
    // the renderer behind most Linux "blank window" reports. Off unless the user chose: WebKit
    // reads the variable itself, so the process replaces itself with the variable set (same
    // pid and arguments) before anything starts.
    //
    // glibc's malloc, in the same restart (issue #14): the screen stream, the in-app virtual
    // phone and the mirror allocate and free 10 MB frames on many threads, and with its
    // default dynamic mmap threshold glibc served them from per-thread arenas and kept them
    // (PSS after ten demo runs 692 MB). Frames ≥ 1 MB mapped and unmapped directly and two
    // arenas: 537 MB (mimalloc measured 713 MB). A value the user set is kept.
    #[cfg(target_os = "linux")]
    {
        const ENV: [(&str, &str); 3] = [
            ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
            ("MALLOC_MMAP_THRESHOLD_", "1048576"),
            ("MALLOC_ARENA_MAX", "2"),
        ];
        let missing: Vec<_> = ENV
            .iter()
            .filter(|(k, _)| std::env::var_os(k).is_none())
            .collect();
        if !missing.is_empty()
            && let Ok(exe) = std::env::current_exe()
        {
            use std::os::unix::process::CommandExt as _;
            let mut cmd = std::process::Command::new(exe);
            cmd.args(std::env::args_os().skip(1));
            for (k, v) in missing {
                cmd.env(k, v);
            }
            let err = cmd.exec();
            eprintln!("note: could not restart with WebKit and malloc settings ({err}); going on");
        }
    }
    phoneagent_app::run();
}
