//! Dispatch of the streaming device services (SPEC V7) on an adb server-protocol connection:
//! `sync:` (push/pull), `localabstract:NAME` (a socket a running scrcpy server listens on),
//! and the long-running commands `CLASSPATH=… app_process … com.genymobile.scrcpy.Server` and
//! `screenrecord --output-format=h264 -` on `shell:` / `shell,v2:` / `exec:`. Everything else
//! goes back to the ordinary one-shot command path.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use crate::adb::{self, Mode};
use crate::phone::AfterService;
use crate::procout::ProcOut;
use crate::server::{Shared, Slot};

/// What [`device_service`] did with the connection.
pub(crate) enum Handled {
    /// Served (or refused) here; the connection is finished.
    Done,
    /// Not a streaming service: the connection comes back untouched.
    NotMine(TcpStream),
}

async fn fail(s: &mut TcpStream, msg: &str) -> io::Result<()> {
    let mut v = b"FAIL".to_vec();
    v.extend_from_slice(format!("{:04x}", msg.len()).as_bytes());
    v.extend_from_slice(msg.as_bytes());
    s.write_all(&v).await
}

/// A long-running command recognised on the command line.
enum Job {
    Scrcpy(crate::scrcpy::Launch),
    Record(crate::screenrecord::Record),
    RecordUsage(String),
}

fn job_of(cmd: &str) -> Option<Job> {
    let words = crate::shell::single_command(cmd)?;
    if let Some(l) = crate::scrcpy::parse(&words) {
        return Some(Job::Scrcpy(l));
    }
    match crate::screenrecord::parse(&words)? {
        Ok(r) => Some(Job::Record(r)),
        Err(msg) => Some(Job::RecordUsage(msg)),
    }
}

/// Serve `req` when it is a streaming service.
pub(crate) async fn device_service(
    mut s: TcpStream,
    shared: &Arc<Shared>,
    slot: &Arc<Slot>,
    link: &CancellationToken,
    req: &str,
) -> io::Result<Handled> {
    if req == "sync:" {
        if !slot.lock().link_up(Instant::now()) || link.is_cancelled() {
            fail(&mut s, &format!("device '{}' not found", slot.serial)).await?;
            return Ok(Handled::Done);
        }
        s.write_all(b"OKAY").await?;
        let r = tokio::select! {
            r = crate::sync::serve(&mut s, slot) => r,
            () = link.cancelled() => return Ok(Handled::Done),
        };
        if let Err(e) = r {
            tracing::debug!("sync: {e}");
            return Ok(Handled::Done);
        }
        adb::finish(s).await;
        return Ok(Handled::Done);
    }
    if let Some(name) = req.strip_prefix("localabstract:") {
        let listening = slot.lock().dev.is_listening(name);
        if !listening || link.is_cancelled() {
            fail(
                &mut s,
                &format!("closed (nothing listens on localabstract:{name})"),
            )
            .await?;
            return Ok(Handled::Done);
        }
        s.write_all(b"OKAY").await?;
        s.flush().await?;
        if slot.lock().dev.connect(name, Box::new(s)).is_err() {
            tracing::debug!("localabstract:{name}: the listener went away");
        }
        return Ok(Handled::Done);
    }
    let Ok((mode, cmd)) = adb::parse_service(req) else {
        return Ok(Handled::NotMine(s));
    };
    let Some(job) = job_of(&cmd) else {
        return Ok(Handled::NotMine(s));
    };
    let Some((after, _delay)) = adb::begin_service(slot, link, &cmd) else {
        fail(&mut s, &format!("device '{}' not found", slot.serial)).await?;
        return Ok(Handled::Done);
    };
    s.write_all(b"OKAY").await?;
    // SPEC V6: starting the stream's process (scrcpy's app_process JVM, screenrecord's
    // MediaCodec) before its first byte.
    let timing = slot.timing();
    if !timing.is_instant() {
        tokio::select! {
            () = tokio::time::sleep(timing.stream_start()) => {}
            () = link.cancelled() => return Ok(Handled::Done),
        }
    }
    // Stopped with the device link, or by `SimPhoneHandle::stop_streams` (a stream that dies
    // while the phone stays: the client falls back to screencap).
    let stop = link.child_token();
    let killer = slot.stream_kill();
    let watch_stop = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = killer.cancelled() => watch_stop.cancel(),
            () = watch_stop.cancelled() => {}
        }
    });
    let out = ProcOut::new(s, mode);
    let r = match job {
        Job::Scrcpy(l) => crate::scrcpy::run(slot.clone(), l, out, stop.clone()).await,
        Job::Record(r) => crate::screenrecord::run(slot.clone(), r, out, stop.clone()).await,
        Job::RecordUsage(msg) => {
            let mut out = out;
            out.stderr(&msg).await?;
            out.exit(if mode == Mode::V2 { 1 } else { 0 }).await
        }
    };
    stop.cancel();
    if after == AfterService::Disconnect {
        // The disconnect fault counted this service: the device vanishes once it ends.
        let away = slot.lock().disconnect(Instant::now());
        shared.after_disconnect(away);
    }
    match r {
        Ok(s) => adb::finish(s).await,
        Err(e) => tracing::debug!("streaming service ended: {e}"),
    }
    Ok(Handled::Done)
}
