//! Retries (SPEC M1): the [`RetryPolicy`] with exponential backoff and jitter, the request loop
//! that races every attempt and backoff against cancellation and the whole-call timeout, and
//! `Retry-After` parsing (seconds or HTTP-date).

use std::time::{Duration, Instant, SystemTime};

use rand::Rng;
use reqwest::StatusCode;
use tokio_util::sync::CancellationToken;

use super::{Attempt, ChatClient};
use crate::error::{LlmError, Result, TimeoutPhase};
use crate::types::{ChatRequest, ChatResponse};

/// Retry behaviour (SPEC M1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts at most).
    pub max_retries: u32,
    /// First backoff, ms; doubles per retry.
    pub base_delay_ms: u64,
    /// Backoff cap, ms.
    pub max_delay_ms: u64,
    /// A `Retry-After` longer than this (ms) is not waited for: the call fails at once.
    pub max_retry_after_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 3,
            base_delay_ms: 500,
            max_delay_ms: 8_000,
            max_retry_after_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// Backoff before retry number `retry` (1-based): `min(max, base·2^(retry-1))`, jittered
    /// uniformly into `[d/2, d]` so clients that failed together do not retry together.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self
            .base_delay_ms
            .saturating_mul(1u64 << retry.saturating_sub(1).min(30));
        let d = exp.min(self.max_delay_ms);
        let half = d / 2;
        let jittered = if d > half {
            rand::rng().random_range(half..=d)
        } else {
            d
        };
        Duration::from_millis(jittered)
    }
}

impl ChatClient {
    /// Delay before the next attempt, or `None` when this failure is final (a `Retry-After`
    /// over `max_retry_after_ms` is final).
    fn retry_delay(&self, a: &Attempt, retry: u32, max_retry_after_ms: u64) -> Option<Duration> {
        if retry > self.cfg.retry.max_retries {
            return None;
        }
        match a {
            Attempt::Status {
                status,
                retry_after,
                ..
            } if is_retryable_status(*status) => match retry_after {
                Some(d) if d.as_millis() > u128::from(max_retry_after_ms) => None,
                Some(d) => {
                    let extra = rand::rng().random_range(0..=(d.as_millis() as u64 / 10).min(250));
                    Some(*d + Duration::from_millis(extra))
                }
                None => Some(self.cfg.retry.backoff(retry)),
            },
            Attempt::Connect(_) | Attempt::ConnectTimeout => Some(self.cfg.retry.backoff(retry)),
            _ => None,
        }
    }

    /// The request loop; a `Retry-After` over `max_retry_after_ms` ends it.
    pub(super) async fn chat_capped(
        &self,
        req: ChatRequest,
        cancel: &CancellationToken,
        max_retry_after_ms: u64,
    ) -> Result<ChatResponse> {
        let stream = req.stream.unwrap_or(self.cfg.stream);
        // Serialized once (a screenshot makes it ~200 KB), reused by every retry.
        let body = {
            let _phase =
                tracing::trace_span!(target: "phoneagent::phase", "request_encode").entered();
            bytes::Bytes::from(self.build_body(&req).to_string())
        };
        let started = Instant::now();
        let total = Duration::from_millis(self.cfg.timeout_ms.max(1));
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(LlmError::Cancelled { endpoint: self.endpoint.clone() });
                }
                r = tokio::time::timeout(total, self.attempt(&body, stream)) => r,
            };
            let failure = match outcome {
                Err(_) => {
                    return Err(LlmError::Timeout {
                        endpoint: self.endpoint.clone(),
                        model: self.cfg.model.clone(),
                        phase: TimeoutPhase::Total,
                        after_ms: self.cfg.timeout_ms,
                    });
                }
                Ok(Ok(parsed)) => {
                    return Ok(parsed.into_response(started.elapsed().as_millis() as u64, attempts));
                }
                Ok(Err(a)) => a,
            };
            let Some(delay) = self.retry_delay(&failure, attempts, max_retry_after_ms) else {
                return Err(self.final_error(failure, attempts));
            };
            tracing::warn!(
                endpoint = %self.endpoint,
                model = %self.cfg.model,
                attempt = attempts,
                delay_ms = delay.as_millis() as u64,
                failure = %failure.summary(),
                "model call failed, retrying"
            );
            tokio::select! {
                biased;
                _ = cancel.cancelled() => {
                    return Err(LlmError::Cancelled { endpoint: self.endpoint.clone() });
                }
                _ = tokio::time::sleep(delay) => {}
            }
        }
    }
}

fn is_retryable_status(s: StatusCode) -> bool {
    matches!(s.as_u16(), 408 | 429 | 500 | 502 | 503 | 504 | 529)
}

/// Parses a `Retry-After` value: delta-seconds (integer or decimal) or an HTTP-date, relative to
/// `now`. A date in the past gives zero. Unparseable values give `None`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = v.parse::<f64>()
        && secs.is_finite()
        && secs >= 0.0
    {
        return Some(Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn backoff_grows_and_is_capped_and_jittered() {
        let p = RetryPolicy {
            max_retries: 5,
            base_delay_ms: 100,
            max_delay_ms: 1000,
            max_retry_after_ms: 10_000,
        };
        for _ in 0..50 {
            let d1 = p.backoff(1).as_millis();
            assert!((50..=100).contains(&d1), "{d1}");
            let d3 = p.backoff(3).as_millis();
            assert!((200..=400).contains(&d3), "{d3}");
            let d10 = p.backoff(10).as_millis();
            assert!((500..=1000).contains(&d10), "{d10}");
        }
    }
}
