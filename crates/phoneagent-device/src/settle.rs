//! How the runtime waits for the screen to settle after an action (SPEC R4, issue #12 item 3),
//! and the default implementation of [`crate::Device::settle`].

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::{Device, DeviceError, Result, Screenshot};

/// How to wait after an action before the verification frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settle {
    /// Sleep this long (today's fixed settle, `settle_ms`).
    Fixed(Duration),
    /// Take frames until the screen has not changed for `quiet` (two consecutive frames with
    /// identical pixels spanning at least `quiet`), at most `max` in all, at least `poll`
    /// apart. Meant for devices whose frames are cheap (a live stream); on `screencap` each
    /// poll is a full capture. Ends with the last frame, which serves as the verification frame.
    UntilStill {
        /// How long the screen must stay unchanged.
        quiet: Duration,
        /// Upper bound of the whole wait.
        max: Duration,
        /// Least time between two frames.
        poll: Duration,
    },
    /// The default (issue #12 item 3): on a device with a live stream, wait until the stream
    /// shows a still screen — no frame that changes it for `quiet`, counted from the action's
    /// delivery or the last change, at most `max` — and hand over the newest frame as the
    /// verification frame; without a stream, sleep `fallback` (a `screencap` per poll would
    /// cost more than it saves).
    Adaptive {
        /// How long the stream must show no change.
        quiet: Duration,
        /// Upper bound of the whole wait.
        max: Duration,
        /// The fixed sleep without a stream.
        fallback: Duration,
    },
}

/// The default [`crate::Device::settle`]: `Fixed` and `Adaptive` sleep (no frame); `UntilStill` polls
/// [`Device::screenshot`] and returns the last frame taken.
///
/// # Errors
/// [`DeviceError::Cancelled`] when `cancel` fires; the screenshot's errors.
pub async fn settle_by_screenshots<D: Device + ?Sized>(
    device: &D,
    how: Settle,
    cancel: &CancellationToken,
) -> Result<Option<Screenshot>> {
    let sleep = |d: Duration| async move {
        tokio::select! {
            _ = tokio::time::sleep(d) => Ok(()),
            _ = cancel.cancelled() => Err(DeviceError::Cancelled),
        }
    };
    match how {
        Settle::Fixed(d) | Settle::Adaptive { fallback: d, .. } => {
            sleep(d).await?;
            Ok(None)
        }
        Settle::UntilStill { quiet, max, poll } => {
            let t0 = Instant::now();
            let mut last = device.screenshot(cancel).await?;
            // When the current run of unchanged frames began.
            let mut still_since = Instant::now();
            loop {
                let spent = t0.elapsed();
                if spent >= max {
                    return Ok(Some(last));
                }
                sleep(poll.min(max - spent)).await?;
                let next = device.screenshot(cancel).await?;
                if same_pixels(&last, &next) {
                    if still_since.elapsed() >= quiet {
                        return Ok(Some(next));
                    }
                } else {
                    still_since = Instant::now();
                }
                last = next;
            }
        }
    }
}

/// True when two frames have the same size and pixels.
pub fn same_pixels(a: &Screenshot, b: &Screenshot) -> bool {
    std::sync::Arc::ptr_eq(&a.image, &b.image)
        || (a.image.dimensions() == b.image.dimensions() && a.image.as_raw() == b.image.as_raw())
}
