//! The command-line face of the scripted model server, shared by the `scripted-model` binary and
//! `phoneagent sim model` (so end-to-end tests of the `phoneagent` binary can start the model as a
//! separate process with the binary they already have).

use std::path::PathBuf;

use phoneagent_protocol::CoordinateSpace;

use crate::{Error, OnExhausted, OracleConfig, Result, Script, ScriptedModelConfig, SimTarget};

/// Flags of the scripted model server (SPEC V5).
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1 (0 = pick a free one; the chosen port is printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// JSONL script of answers (see the phoneagent-testkit crate docs).
    #[arg(long, value_name = "FILE")]
    pub script: Option<PathBuf>,
    /// Oracle mode: answer calibration probes from the image, and read label placeholders'
    /// ground truth from the virtual phone listening on this port.
    #[arg(long, value_name = "PORT")]
    pub oracle_sim_port: Option<u16>,
    /// Oracle mode without a virtual phone (probes only).
    #[arg(long)]
    pub oracle: bool,
    /// Virtual phone port for `{{center:LABEL}}` placeholders (script mode).
    #[arg(long, value_name = "PORT", conflicts_with = "oracle_sim_port")]
    pub sim_port: Option<u16>,
    /// Virtual phone serial (default: the only device).
    #[arg(long, value_name = "SERIAL")]
    pub sim_serial: Option<String>,
    /// Coordinate space of answers: relative_0_999 or image_pixels.
    #[arg(long, default_value = "relative_0_999")]
    pub space: String,
    /// Append every request as a JSON line to this file.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Oracle: deliberate error of every answer, in image px (shifts right).
    #[arg(long, default_value_t = 0.0, value_name = "N")]
    pub oracle_error_px: f64,
    /// Oracle: answer wrong on purpose (tests fail-closed calibration).
    #[arg(long)]
    pub bad: bool,
    /// What an empty queue answers: error (HTTP 500) or repeat_last. Overrides the script.
    #[arg(long, value_name = "POLICY")]
    pub on_exhausted: Option<String>,
    /// Model ids for /v1/models (repeatable; default scripted-model).
    #[arg(long = "model", value_name = "ID")]
    pub models: Vec<String>,
    /// Require `Authorization: Bearer <key>` with the key read from this environment variable.
    #[arg(long, value_name = "VAR")]
    pub require_api_key_env: Option<String>,
    /// Characters per SSE delta.
    #[arg(long, default_value_t = 8)]
    pub stream_chunk_chars: usize,
}

impl ServeArgs {
    /// The server configuration these flags describe.
    ///
    /// Errors ([`Error::Config`], or the script's own errors) name the flag and the fix: no
    /// script and no oracle, an unsupported `--space`, an unknown `--on-exhausted` policy, an
    /// unset `--require-api-key-env` variable.
    pub fn into_config(self) -> Result<ScriptedModelConfig> {
        let oracle_on = self.oracle || self.oracle_sim_port.is_some();
        if self.script.is_none() && !oracle_on {
            return Err(Error::Config(
                "give --script FILE (scripted answers) or --oracle-sim-port PORT / --oracle (oracle mode), or both".into(),
            ));
        }
        let space: CoordinateSpace = self
            .space
            .parse()
            .map_err(|e: String| Error::Config(format!("--space: {e}")))?;
        if !matches!(
            space,
            CoordinateSpace::Relative0999 | CoordinateSpace::ImagePixels
        ) {
            return Err(Error::Config(format!(
                "--space {space} is not supported: use relative_0_999 or image_pixels"
            )));
        }
        let mut script = match &self.script {
            Some(p) => Script::from_file(p)?,
            None => Script::default(),
        };
        if let Some(p) = &self.on_exhausted {
            script.on_exhausted = match p.as_str() {
                "error" => OnExhausted::Error,
                "repeat_last" => OnExhausted::RepeatLast,
                other => {
                    return Err(Error::Config(format!(
                        "--on-exhausted {other:?}: use error or repeat_last"
                    )));
                }
            };
        }
        let require_api_key = match &self.require_api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                Error::Config(format!(
                    "--require-api-key-env {var}: the environment variable is not set"
                ))
            })?),
            None => None,
        };
        let sim_port = self.oracle_sim_port.or(self.sim_port);
        Ok(ScriptedModelConfig {
            script,
            space,
            sim: sim_port.map(|port| SimTarget {
                port,
                serial: self.sim_serial.clone(),
            }),
            oracle: oracle_on.then_some(OracleConfig {
                error_px: self.oracle_error_px,
                bad: self.bad,
            }),
            models: if self.models.is_empty() {
                vec!["scripted-model".into()]
            } else {
                self.models
            },
            require_api_key,
            record_file: self.record,
            stream_chunk_chars: self.stream_chunk_chars.max(1),
            port: self.port,
        })
    }
}
