//! `screenrecord --output-format=h264 [--time-limit S] [--bit-rate B] [--size WxH] -`
//! (SPEC V7): raw H.264 Annex B of the screen on stdout while it runs, frames only when the
//! screen changes (as Android's screenrecord), stopping after its time limit (default and
//! maximum 180 s), as on a phone. Writing an MP4 file is not emulated.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tokio::io::AsyncWrite;
use tokio_util::sync::CancellationToken;

use crate::procout::ProcOut;
use crate::server::Slot;
use crate::videoenc::{self, EncodeOpts};

/// Android's default and largest `--time-limit`, in seconds.
pub(crate) const MAX_TIME_LIMIT_S: u64 = 180;

/// A parsed `screenrecord` command.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Record {
    pub time_limit: Duration,
    pub bit_rate: u32,
}

const USAGE: &str = "Usage: screenrecord [options] <filename>\n\n\
Android screenrecord v1.3.  Records the device's display to a .mp4 file.\n\n\
Options:\n--size WIDTHxHEIGHT\n--bit-rate RATE\n--time-limit TIME (max 180 s)\n\
--output-format FORMAT (mp4, h264, frames or raw-frames; only h264 to - on the virtual phone)\n\
--verbose\n--help\n";

/// Recognise `screenrecord …` (`Some(Err(msg))` for a bad command line, printed on stderr with
/// exit 1 / 2 as screenrecord does).
pub(crate) fn parse(words: &[String]) -> Option<Result<Record, String>> {
    let (first, rest) = words.split_first()?;
    if first != "screenrecord" && first != "/system/bin/screenrecord" {
        return None;
    }
    let mut format = "mp4".to_owned();
    let mut limit = MAX_TIME_LIMIT_S;
    let mut bit_rate = 20_000_000u32;
    let mut file: Option<&str> = None;
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        rest.get(*i)
            .cloned()
            .ok_or_else(|| format!("screenrecord: option {flag} needs a value\n{USAGE}"))
    };
    while i < rest.len() {
        let a = rest[i].as_str();
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
            _ => (a, None),
        };
        let mut get = |flag: &str| match &inline {
            Some(v) => Ok(v.clone()),
            None => value(&mut i, flag),
        };
        match flag {
            "--output-format" => match get(flag) {
                Ok(v) => format = v,
                Err(e) => return Some(Err(e)),
            },
            "--time-limit" => match get(flag).map(|v| v.parse::<u64>()) {
                Ok(Ok(v)) if (1..=MAX_TIME_LIMIT_S).contains(&v) => limit = v,
                Ok(Ok(v)) => {
                    return Some(Err(format!(
                        "Time limit {v} is out of range [1,{MAX_TIME_LIMIT_S}]\n"
                    )));
                }
                _ => return Some(Err(format!("Invalid time limit\n{USAGE}"))),
            },
            "--bit-rate" => match get(flag).map(|v| v.parse::<u32>()) {
                Ok(Ok(v)) if v >= 100_000 => bit_rate = v,
                _ => return Some(Err(format!("Invalid bit rate\n{USAGE}"))),
            },
            "--size" => {
                if let Err(e) = get(flag) {
                    return Some(Err(e));
                }
            }
            "--verbose" | "--bugreport" | "--rotate" => {}
            "--help" => return Some(Err(USAGE.to_owned())),
            f if f.starts_with('-') && f != "-" => {
                return Some(Err(format!("Unknown option {f}\n{USAGE}")));
            }
            f => file = Some(f),
        }
        i += 1;
    }
    match (format.as_str(), file) {
        ("h264", Some("-")) => Some(Ok(Record {
            time_limit: Duration::from_secs(limit),
            bit_rate,
        })),
        (_, None) => Some(Err(format!("Must specify output file name\n{USAGE}"))),
        _ => Some(Err(
            "screenrecord: the virtual phone records only `--output-format=h264 -` (raw H.264 on stdout)\n"
                .to_owned(),
        )),
    }
}

/// Run a recording until its time limit, the client leaving, or `stop`.
pub(crate) async fn run<W: AsyncWrite + Unpin>(
    slot: Arc<Slot>,
    rec: Record,
    mut out: ProcOut<W>,
    stop: CancellationToken,
) -> std::io::Result<W> {
    let halt = stop.child_token();
    let opts = EncodeOpts {
        max_fps: 60.0,
        bit_rate: rec.bit_rate,
        repeat_after: None,
        key_every: Duration::from_secs(1),
    };
    let mut rx = match videoenc::spawn(
        slot.clone(),
        opts,
        halt.clone(),
        Arc::new(AtomicBool::new(false)),
    ) {
        Ok(rx) => rx,
        Err(e) => {
            out.stderr(&format!("screenrecord: {e}\n")).await?;
            return out.exit(1).await;
        }
    };
    let deadline = tokio::time::sleep(rec.time_limit);
    tokio::pin!(deadline);
    let r = loop {
        tokio::select! {
            () = &mut deadline => break Ok(()),
            () = stop.cancelled() => break Err(std::io::Error::other("the device disconnected")),
            p = rx.recv() => match p {
                Some(p) => {
                    videoenc::latency(&slot, &p).await;
                    if let Err(e) = out.stdout(&p.data).await {
                        break Err(e);
                    }
                }
                None => break Ok(()),
            },
        }
    };
    halt.cancel();
    r?;
    out.exit(0).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn parses_the_stream_form_and_refuses_the_rest() {
        let r = parse(&w("screenrecord --output-format=h264 --time-limit 3 -"))
            .unwrap()
            .unwrap();
        assert_eq!(r.time_limit, Duration::from_secs(3));
        let r = parse(&w("screenrecord --output-format h264 -"))
            .unwrap()
            .unwrap();
        assert_eq!(r.time_limit, Duration::from_secs(180));
        assert!(
            parse(&w("screenrecord --time-limit 500 --output-format=h264 -"))
                .unwrap()
                .is_err()
        );
        assert!(parse(&w("screenrecord /sdcard/a.mp4")).unwrap().is_err());
        assert!(parse(&w("screenrecord --bogus -")).unwrap().is_err());
        assert!(parse(&w("screencap -p")).is_none());
    }
}
