//! A tiny client for the sim-only host services (`host:sim-state`, `host:sim-fault`,
//! `host:sim-reset`) of a virtual phone running in another process (`phoneagent sim serve`).
//! Never used by the agent's device code path (SPEC V3).

use std::net::{Ipv4Addr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{Result, SimError};
use crate::truth::{Faults, GroundTruth};

fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::LOCALHOST, port))
}

/// Send one host request; returns everything after `OKAY` until the server closes (or, for
/// services that keep the socket open, nothing). `FAIL` becomes [`SimError::Refused`].
pub async fn request(addr: SocketAddr, service: &str, read_body: bool) -> Result<Vec<u8>> {
    if service.len() > 0xffff {
        return Err(SimError::Protocol(format!(
            "request of {} bytes is longer than the protocol allows (65535)",
            service.len()
        )));
    }
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|source| SimError::Connect { addr, source })?;
    s.write_all(format!("{:04x}{service}", service.len()).as_bytes())
        .await?;
    let mut status = [0u8; 4];
    s.read_exact(&mut status).await?;
    match &status {
        b"OKAY" => {
            let mut body = Vec::new();
            if read_body {
                s.read_to_end(&mut body).await?;
            }
            Ok(body)
        }
        b"FAIL" => {
            let mut len = [0u8; 4];
            s.read_exact(&mut len).await?;
            let n = std::str::from_utf8(&len)
                .ok()
                .and_then(|h| usize::from_str_radix(h, 16).ok())
                .ok_or_else(|| SimError::Protocol("bad FAIL length".to_owned()))?;
            let mut msg = vec![0u8; n];
            s.read_exact(&mut msg).await?;
            Err(SimError::Refused(
                String::from_utf8_lossy(&msg).into_owned(),
            ))
        }
        other => Err(SimError::Protocol(format!(
            "expected OKAY or FAIL, got {:?}",
            String::from_utf8_lossy(other)
        ))),
    }
}

fn with_serial(verb: &str, serial: Option<&str>, arg: Option<&str>) -> String {
    let mut s = format!("host:{verb}");
    if let Some(ser) = serial {
        s.push(':');
        s.push_str(ser);
    }
    if let Some(a) = arg {
        s.push(':');
        s.push_str(a);
    }
    s
}

/// Ground truth of the device `serial` (or the only device) of the sim at 127.0.0.1:`port`.
pub async fn fetch_state(port: u16, serial: Option<&str>) -> Result<GroundTruth> {
    fetch_state_at(loopback(port), serial).await
}

/// [`fetch_state`] at any address.
pub async fn fetch_state_at(addr: SocketAddr, serial: Option<&str>) -> Result<GroundTruth> {
    let body = request(addr, &with_serial("sim-state", serial, None), true).await?;
    Ok(serde_json::from_slice(&body)?)
}

/// Replace the faults of a device (see [`Faults`]).
pub async fn set_faults(port: u16, serial: Option<&str>, faults: &Faults) -> Result<()> {
    set_faults_at(loopback(port), serial, faults).await
}

/// [`set_faults`] at any address.
pub async fn set_faults_at(addr: SocketAddr, serial: Option<&str>, faults: &Faults) -> Result<()> {
    let json = serde_json::to_string(faults)?;
    request(addr, &with_serial("sim-fault", serial, Some(&json)), false).await?;
    Ok(())
}

/// Reset a device to a scenario (see [`crate::SCENARIOS`]).
pub async fn reset(port: u16, serial: Option<&str>, scenario: &str) -> Result<()> {
    reset_at(loopback(port), serial, scenario).await
}

/// [`reset`] at any address.
pub async fn reset_at(addr: SocketAddr, serial: Option<&str>, scenario: &str) -> Result<()> {
    request(
        addr,
        &with_serial("sim-reset", serial, Some(scenario)),
        false,
    )
    .await?;
    Ok(())
}
