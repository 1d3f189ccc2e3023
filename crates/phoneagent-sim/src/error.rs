//! Errors of the virtual phone.

use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = SimError> = std::result::Result<T, E>;

/// Everything that can go wrong starting, rendering or talking to the virtual phone. Each message
/// names what was wrong and what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No font with CJK glyphs was found on the system.
    #[error(
        "no font with CJK glyphs found (looked at: {searched}); install one with \
         `sudo apt-get install fonts-wqy-microhei` (or `fonts-noto-cjk`), or point \
         PHONEAGENT_SIM_FONT at a .ttf/.ttc/.otf file that has Chinese glyphs"
    )]
    FontNotFound {
        /// The paths that were tried, comma separated.
        searched: String,
    },
    /// The font named by `PHONEAGENT_SIM_FONT` cannot be used.
    #[error(
        "the font {path} (from PHONEAGENT_SIM_FONT) cannot be used: {reason}; point the variable \
         at a TrueType/OpenType font with Chinese glyphs, or unset it"
    )]
    FontUnusable {
        /// The file.
        path: PathBuf,
        /// Why it was refused.
        reason: String,
    },
    /// The listening socket could not be bound.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source}; pick another port with --port \
         (0 picks a free one) or stop whatever is using it"
    )]
    Bind {
        /// Requested port.
        port: u16,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The client could not connect to a virtual phone.
    #[error(
        "cannot reach a virtual phone at {addr}: {source}; is `phoneagent sim serve --port {port}` \
         running?",
        port = addr.port()
    )]
    Connect {
        /// Address tried.
        addr: std::net::SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The server answered `FAIL` with this message.
    #[error("the virtual phone refused the request: {0}")]
    Refused(String),
    /// The peer did not follow the protocol.
    #[error("protocol error talking to the virtual phone: {0}")]
    Protocol(String),
    /// Socket I/O failed.
    #[error("I/O error talking to the virtual phone: {0}")]
    Io(#[from] std::io::Error),
    /// Ground truth / fault JSON could not be (de)serialized.
    #[error("bad JSON from/for the virtual phone: {0}")]
    Json(#[from] serde_json::Error),
    /// PNG encoding failed.
    #[error("cannot encode the screen as PNG: {0}")]
    Png(String),
    /// A configuration value is invalid.
    #[error("invalid virtual phone configuration: {0}")]
    Config(String),
    /// `sim-reset` named a scenario that does not exist.
    #[error("unknown scenario `{name}`; known scenarios: {known}")]
    UnknownScenario {
        /// The requested name.
        name: String,
        /// Known names, comma separated.
        known: String,
    },
}
