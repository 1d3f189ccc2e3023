//! The demo's rig (SPEC C1), shared by `phoneagent demo` and the consoles' "Run demo": the
//! scripted model server of a scenario, in this process, aimed at a virtual phone, and the run
//! configuration a demo gets. Both are reached over their real protocols (ADB and
//! OpenAI-compatible HTTP on loopback), so a demo runs the same code path as a real run.

use phoneagent_protocol::CoordinateSpace;
use phoneagent_runtime::{AgentConfig, ModelRoute};
use phoneagent_testkit::demo::DemoScenario;
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};

/// Step limit of a demo run.
pub const DEMO_MAX_STEPS: u32 = 20;

/// A scenario's scripted model server, running.
pub struct DemoModel {
    model: ScriptedModel,
}

impl DemoModel {
    /// Start `scenario`'s scripted model, resolving its labels against the virtual phone
    /// `serial` served at `127.0.0.1:sim_port`. The phone should already show the scenario's
    /// first screen (`SimPhone::reset(scenario.start_screen)`).
    ///
    /// # Errors
    /// The scenario's script does not parse, or the server cannot start (the message says
    /// which).
    pub async fn start(
        scenario: &DemoScenario,
        sim_port: u16,
        serial: &str,
    ) -> Result<Self, String> {
        let script = Script::parse_jsonl(scenario.script)
            .map_err(|e| format!("the demo script is invalid: {e}"))?;
        let model = ScriptedModel::start(ScriptedModelConfig {
            script,
            space: CoordinateSpace::Relative0999,
            sim: Some(SimTarget {
                port: sim_port,
                serial: Some(serial.to_string()),
            }),
            ..ScriptedModelConfig::default()
        })
        .await
        .map_err(|e| format!("cannot start the demo model server: {e}"))?;
        Ok(Self { model })
    }

    /// The route of model role `role` (`actor`, `verifier`, `auto-reviewer`): the scripted
    /// model, with no key, in the 0..999 space.
    ///
    /// # Errors
    /// The HTTP client cannot be built.
    pub fn route(&self, role: &str) -> Result<ModelRoute, phoneagent_llm::LlmError> {
        ModelRoute::unkeyed(
            &self.model.base_url(),
            "scripted-model",
            CoordinateSpace::Relative0999,
            format!("demo-{role}"),
        )
    }

    /// Stop the server.
    pub async fn shutdown(self) {
        self.model.shutdown().await;
    }
}

/// The run configuration of a demo of `scenario`: its mode, [`DEMO_MAX_STEPS`], labelled a
/// demo in its events and history.
pub fn demo_config(scenario: &DemoScenario) -> AgentConfig {
    AgentConfig {
        mode: scenario.mode,
        max_steps: DEMO_MAX_STEPS,
        demo: true,
        ..AgentConfig::default()
    }
}
