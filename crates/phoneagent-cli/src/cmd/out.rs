//! Standard output that survives its reader going away (`phoneagent runs | head -1`,
//! `phoneagent demo | head`): `println!` panics on a closed pipe ("failed printing to stdout"),
//! which would end a run without restoring the phone's keyboard. `outln!` and `out!` write through [`write`]; the first failed write marks stdout gone,
//! later output is dropped, and [`gone`] fires so a running task is cancelled the normal way
//! (IME restored, run recorded `cancelled`).

use std::io::Write;
use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

/// Cancelled once stdout could not be written (its reader closed the pipe).
pub fn gone() -> &'static CancellationToken {
    static GONE: OnceLock<CancellationToken> = OnceLock::new();
    GONE.get_or_init(CancellationToken::new)
}

/// Write `args` (and a newline when `newline`) to stdout and flush; after a failed write, do
/// nothing. Never panics.
pub fn write(args: std::fmt::Arguments<'_>, newline: bool) {
    if gone().is_cancelled() {
        return;
    }
    // SPEC S14: whatever the line holds (a model's reason, a task, text read from the screen),
    // no control character or escape sequence reaches the terminal.
    let text = phoneagent_protocol::text::inert_block(&args.to_string());
    let mut o = std::io::stdout().lock();
    let r = o
        .write_all(text.as_bytes())
        .and_then(|()| if newline { o.write_all(b"\n") } else { Ok(()) })
        .and_then(|()| o.flush());
    if let Err(e) = r {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            // Not a reader that left (disk full, I/O error): the output is incomplete, and
            // the command must fail (see [`write_error`]).
            let _ = WRITE_ERROR.set(e.to_string());
        }
        tracing::debug!("stdout closed: {e}");
        gone().cancel();
    }
}

static WRITE_ERROR: OnceLock<String> = OnceLock::new();

/// Why stdout failed, when it was not a closed pipe: `main` reports it and exits non-zero.
pub fn write_error() -> Option<&'static str> {
    WRITE_ERROR.get().map(String::as_str)
}

/// A line on stderr that never panics (stderr may be a closed pipe as well).
pub fn note(msg: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "{}",
        phoneagent_protocol::text::inert_block(msg)
    );
}

/// Write `msg` to stderr as it is shown at a prompt (no newline added), inert (SPEC S14), and
/// flush. Never panics.
pub fn prompt(msg: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(phoneagent_protocol::text::inert_block(msg).as_bytes());
    let _ = e.flush();
}

/// `println!` that never panics (see the module docs).
macro_rules! outln {
    () => {
        $crate::cmd::out::write(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::cmd::out::write(format_args!($($arg)*), true)
    };
}

/// `print!` that never panics (see the module docs).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cmd::out::write(format_args!($($arg)*), false)
    };
}

/// A signal that asks the process to stop (SPEC D4: every stop path restores the phone's
/// keyboard): Ctrl-C (SIGINT) everywhere, and SIGTERM (`kill`, a service manager) and SIGHUP
/// (the terminal closed) on Unix. Resolves once per signal; call again for the next.
/// Returns the signal's name. A signal that cannot be watched is never reported.
pub async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        let wait = |s: &mut Option<tokio::signal::unix::Signal>| {
            let s = s.take();
            async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            }
        };
        tokio::select! {
            r = tokio::signal::ctrl_c() => match r {
                Ok(()) => "SIGINT",
                Err(_) => std::future::pending().await,
            },
            () = wait(&mut term) => "SIGTERM",
            () = wait(&mut hup) => "SIGHUP",
        }
    }
    #[cfg(not(unix))]
    {
        match tokio::signal::ctrl_c().await {
            Ok(()) => "Ctrl-C",
            Err(_) => std::future::pending().await,
        }
    }
}
