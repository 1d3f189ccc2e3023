//! The shared setup of the runtime's end-to-end tests: the virtual phone over the ADB protocol
//! and the scripted model over OpenAI-compatible HTTP, both in-process on loopback, with the
//! real SQLite store (in memory).

use phoneagent_review::auto::AutoReviewConfig;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use phoneagent_device::{AdbDevice, AdbDeviceOptions, AdbServer, AdbServerAddr, Device};
use phoneagent_llm::config::{ActionProtocol, Profile};
use phoneagent_llm::{ChatClient, ClientConfig, RetryPolicy};
use phoneagent_protocol::event::{GateOutcome, HumanRequestKind, HumanResponse};
use phoneagent_protocol::{AccessMode, AgentEvent, CoordinateSpace, EventEnvelope, RiskTier};
use phoneagent_runtime::store_recorder::StoreRecorder;
use phoneagent_runtime::{
    Agent, AgentConfig, AgentParts, Approver, ModelRoute, PendingApprovals, RunOutcome,
};
use phoneagent_sim::{Faults, GroundTruth, SimConfig, SimServer};
use phoneagent_store::Store;
use phoneagent_testkit::{Script, ScriptedModel, ScriptedModelConfig, SimTarget};
use tokio_util::sync::CancellationToken;

/// The gate's screen reader (Tesseract OCR, SPEC S10), loaded once per test process. The
/// engine must be installed (scripts/install-deps.sh): a missing engine fails the tests with
/// the fix, it never silently turns screen reading off.
pub fn screen_reader() -> Arc<phoneagent_vision::ScreenReader> {
    static READER: std::sync::OnceLock<Arc<phoneagent_vision::ScreenReader>> =
        std::sync::OnceLock::new();
    READER
        .get_or_init(|| {
            Arc::new(
                phoneagent_vision::ScreenReader::new(phoneagent_vision::ReaderConfig::default())
                    .unwrap_or_else(|e| panic!("the gate's OCR engine is missing: {e}")),
            )
        })
        .clone()
}

/// The capture path of the e2e suite: `PHONEAGENT_E2E_CAPTURE=auto|scrcpy|screenrecord|raw|png`
/// (default `png`), so the same tests prove R3, R4 and D3 on the live stream (issue #12).
/// The scrcpy paths push a stand-in `scrcpy-server`: the virtual phone runs its own.
pub fn capture_mode() -> phoneagent_device::ScreenshotMode {
    std::env::var("PHONEAGENT_E2E_CAPTURE")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.parse()
                .unwrap_or_else(|e| panic!("PHONEAGENT_E2E_CAPTURE: {e}"))
        })
        .unwrap_or_default()
}

/// A stand-in `scrcpy-server` file (the virtual phone emulates the server for any jar).
pub fn stand_in_scrcpy_server() -> std::path::PathBuf {
    static JAR: OnceLock<std::path::PathBuf> = OnceLock::new();
    JAR.get_or_init(|| {
        let p = std::env::temp_dir().join(format!(
            "phoneagent-e2e-scrcpy-server-{}",
            std::process::id()
        ));
        std::fs::write(
            &p,
            b"PK\x03\x04 stand-in scrcpy-server for the virtual phone",
        )
        .unwrap();
        p
    })
    .clone()
}

/// Device options of the suite: [`capture_mode`].
pub fn device_options() -> AdbDeviceOptions {
    AdbDeviceOptions {
        screenshot_mode: capture_mode(),
        scrcpy_server: Some(stand_in_scrcpy_server()),
        ..AdbDeviceOptions::default()
    }
}

pub struct Harness {
    pub sim: SimServer,
    pub serial: String,
    pub model: ScriptedModel,
    pub store: Store,
    pub approvals: PendingApprovals,
    pub agent: Arc<Agent>,
    pub events: tokio::sync::broadcast::Receiver<EventEnvelope>,
}

/// The demo's "buy the first product" script.
pub const BUY: &str = include_str!("../../../phoneagent-testkit/demo/buy.jsonl");
/// The demo's "draft a mail, don't send it" script.
pub const DRAFT: &str = include_str!("../../../phoneagent-testkit/demo/draft-mail.jsonl");

pub struct Opts {
    pub mode: AccessMode,
    pub protocol: ActionProtocol,
    pub verifier: bool,
    pub reviewer: bool,
    pub max_steps: u32,
    pub faults: Option<Faults>,
    pub scenario: Option<&'static str>,
    /// Approve-for-me configuration (applied in that mode; default config when None).
    pub auto_review: Option<AutoReviewConfig>,
    /// Where the auto-reviewer model is.
    pub auto_reviewer: AutoReviewerAt,
    /// A safety reviewer whose client has a 2 s timeout and no retries, at this base URL (an
    /// unreachable endpoint), or at the scripted model when empty (its scripted faults).
    pub reviewer_url: Option<String>,
    /// Last word on the agent's configuration.
    pub config: fn(&mut AgentConfig),
    /// The space the scripted model answers in (placeholders and oracle).
    pub model_space: CoordinateSpace,
    /// Oracle mode of the scripted model (calibration probes answered from the image).
    pub oracle: Option<phoneagent_testkit::OracleConfig>,
    /// The actor profile's coordinate space (`Auto` = negotiate, SPEC M4).
    pub actor_space: CoordinateSpace,
    /// The gate reads the screen (OCR, SPEC S10). On by default; off only in tests of a
    /// contract that needs a call the model's words alone classify (the reversibility
    /// reviewer's soft candidates, SPEC S7: the screen would make "删除" read as 删除账号).
    pub screen_reading: bool,
    /// The actor profile's model name (its family is detected from it, SPEC M7); `None` =
    /// `scripted-model` (generic).
    pub actor_model: Option<&'static str>,
    /// The capture path (default: [`capture_mode`], from `PHONEAGENT_E2E_CAPTURE`).
    pub capture: Option<phoneagent_device::ScreenshotMode>,
}

/// Where the approve-for-me reviewer model is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoReviewerAt {
    /// The same scripted model server (queue `auto_reviewer`).
    Scripted,
    /// A loopback port nobody listens on (connection refused: an outage).
    Refused,
    /// No reviewer model configured.
    Missing,
    /// The scripted server, through a models.json profile whose key is in this OS-keyring
    /// entry (resolved by `KeyStore`, as the product does).
    KeyringEntry(&'static str),
}

impl Default for Opts {
    fn default() -> Self {
        Self {
            mode: AccessMode::Wary,
            protocol: ActionProtocol::Do,
            verifier: true,
            reviewer: false,
            max_steps: 20,
            faults: None,
            scenario: None,
            auto_review: None,
            auto_reviewer: AutoReviewerAt::Scripted,
            reviewer_url: None,
            config: |_| {},
            model_space: CoordinateSpace::Relative0999,
            oracle: None,
            actor_space: CoordinateSpace::Relative0999,
            screen_reading: true,
            actor_model: None,
            capture: None,
        }
    }
}

pub fn route(base_url: &str, name: &str, protocol: ActionProtocol) -> ModelRoute {
    let mut profile = Profile::new(base_url, "scripted-model");
    profile.coordinate_space = CoordinateSpace::Relative0999;
    profile.protocol = protocol;
    let mut cfg = ClientConfig::new(base_url, "scripted-model");
    cfg.timeout_ms = 20_000;
    cfg.retry = RetryPolicy {
        max_retries: 2,
        ..RetryPolicy::default()
    };
    let client = ChatClient::new(cfg).expect("client");
    ModelRoute {
        client: Arc::new(client),
        profile_name: name.into(),
        profile,
        fallback: None,
    }
}

/// A route to an endpoint that is expected to fail: 2 s timeout, no retries.
pub fn failing_route(base_url: &str) -> ModelRoute {
    let mut profile = Profile::new(base_url, "scripted-model");
    profile.coordinate_space = CoordinateSpace::Relative0999;
    let mut cfg = ClientConfig::new(base_url, "scripted-model");
    cfg.timeout_ms = 2_000;
    cfg.retry = RetryPolicy {
        max_retries: 0,
        ..RetryPolicy::default()
    };
    ModelRoute {
        client: Arc::new(ChatClient::new(cfg).expect("client")),
        profile_name: "test-reviewer".into(),
        profile,
        fallback: None,
    }
}

impl Harness {
    pub async fn new(script: &str, opts: Opts) -> Self {
        // Load the OCR engine first (once per process, ~1 s): not after the timed faults start.
        let reader = opts.screen_reading.then(screen_reader);
        let sim = SimServer::start(SimConfig::default(), 0)
            .await
            .expect("sim");
        let serial = sim.serials().into_iter().next().expect("serial");
        let model = ScriptedModel::start(ScriptedModelConfig {
            script: Script::parse_jsonl(script).expect("script"),
            space: opts.model_space,
            oracle: opts.oracle,
            sim: Some(SimTarget {
                port: sim.port(),
                serial: Some(serial.clone()),
            }),
            ..ScriptedModelConfig::default()
        })
        .await
        .expect("model");
        let addr = AdbServerAddr::parse(&format!("127.0.0.1:{}", sim.port())).unwrap();
        let device: Arc<dyn Device> = Arc::new(
            AdbDevice::open(
                AdbServer::new(addr),
                &serial,
                AdbDeviceOptions {
                    screenshot_mode: opts.capture.unwrap_or_else(capture_mode),
                    ..device_options()
                },
            )
            .await
            .expect("device"),
        );
        // Faults and the starting screen last, so timed faults (a dialog N ms after the screen
        // opens) start as close as possible to the run, even on a loaded machine.
        // (A reset clears the faults, so the screen comes first.)
        if let Some(s) = opts.scenario {
            sim.phone(&serial).unwrap().reset(s).unwrap();
        }
        if let Some(f) = opts.faults.clone() {
            sim.phone(&serial).unwrap().set_faults(f);
        }
        let store = Store::open_in_memory().expect("store");
        let approvals = PendingApprovals::new();
        let base = model.base_url();
        let agent = Agent::new(
            AgentParts {
                device,
                actor: {
                    let mut r = route(&base, "test-actor", opts.protocol);
                    r.profile.coordinate_space = opts.actor_space;
                    if let Some(m) = opts.actor_model {
                        r.profile.model = m.into();
                    }
                    r
                },
                verifier: opts
                    .verifier
                    .then(|| route(&base, "test-verifier", ActionProtocol::Do)),
                safety_reviewer: match &opts.reviewer_url {
                    Some(url) if url.is_empty() => Some(failing_route(&base)),
                    Some(url) => Some(failing_route(url)),
                    None => opts
                        .reviewer
                        .then(|| route(&base, "test-reviewer", ActionProtocol::Do)),
                },
                approver: Arc::new(approvals.clone()) as Arc<dyn Approver>,
                recorder: Arc::new(StoreRecorder::new(store.clone())),
                calibration_cache: None,
            },
            {
                let mut c = AgentConfig {
                    mode: opts.mode,
                    max_steps: opts.max_steps,
                    settle_ms: 250,
                    // PHONEAGENT_E2E_REUSE_VERIFY=1: the suite with the verification frame
                    // reused as the next planning frame (off by default, see AgentConfig).
                    reuse_verify_frame: std::env::var("PHONEAGENT_E2E_REUSE_VERIFY")
                        .is_ok_and(|v| v == "1"),
                    ..AgentConfig::default()
                };
                (opts.config)(&mut c);
                c
            },
        );
        let auto_route = match opts.auto_reviewer {
            AutoReviewerAt::Scripted => {
                Some(route(&base, "test-auto-reviewer", ActionProtocol::Do))
            }
            AutoReviewerAt::Refused => {
                let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                let port = l.local_addr().unwrap().port();
                drop(l);
                Some(route(
                    &format!("http://127.0.0.1:{port}/v1"),
                    "test-auto-reviewer",
                    ActionProtocol::Do,
                ))
            }
            AutoReviewerAt::Missing => None,
            AutoReviewerAt::KeyringEntry(entry) => {
                let json = serde_json::json!({
                    "profiles": {"keyed": {"base_url": base, "model": "scripted-model",
                        "keyring_entry": entry, "protocol": "do",
                        "coordinate_space": "relative_0_999"}},
                    "roles": {"actor": {"model": "keyed"}, "auto_reviewer": {"model": "keyed"}}
                });
                let cfg = phoneagent_llm::config::ModelsConfig::from_json(
                    &json.to_string(),
                    std::path::Path::new("models.json"),
                )
                .unwrap();
                match cfg
                    .resolve(
                        phoneagent_llm::config::Role::AutoReviewer,
                        &phoneagent_llm::KeyStore::new(),
                    )
                    .unwrap()
                {
                    phoneagent_llm::config::RoleResolution::Resolved(m) => {
                        assert!(m.api_key.is_some(), "the key comes from the keyring");
                        Some(ModelRoute::from_resolved(&m).unwrap())
                    }
                    other => panic!("auto_reviewer unavailable: {other:?}"),
                }
            }
        };
        let agent = Arc::new(
            agent
                .with_approve_for_me(opts.auto_review.clone().unwrap_or_default(), auto_route)
                .expect("approve-for-me config")
                .with_screen_reader(reader),
        );
        let events = agent.subscribe();
        Self {
            sim,
            serial,
            model,
            store,
            approvals,
            agent,
            events,
        }
    }

    pub fn truth(&self) -> GroundTruth {
        self.sim.phone(&self.serial).unwrap().ground_truth()
    }

    /// Run `task` to its end (at most 120 s). On a timeout the panic names the requests
    /// still waiting for a human and the last events, so a hang says where it hangs.
    pub async fn run(&self, task: &str) -> RunOutcome {
        let mut watch = self.agent.subscribe();
        let tail = Arc::new(std::sync::Mutex::new(std::collections::VecDeque::new()));
        let recorder = {
            let tail = tail.clone();
            tokio::spawn(async move {
                while let Ok(e) = watch.recv().await {
                    let mut t = tail.lock().unwrap();
                    if t.len() == 12 {
                        t.pop_front();
                    }
                    t.push_back(format!("{:?}", e.event));
                }
            })
        };
        let out = tokio::time::timeout(
            Duration::from_secs(120),
            self.agent.run(task, CancellationToken::new()),
        )
        .await;
        recorder.abort();
        match out {
            Ok(r) => r.expect("run started"),
            Err(_) => {
                let pending: Vec<_> = self
                    .approvals
                    .pending()
                    .into_iter()
                    .map(|r| r.kind)
                    .collect();
                let tail: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
                panic!(
                    "run not finished in 120 s; waiting for a human: {pending:?}; last events:\n{}",
                    tail.join("\n")
                )
            }
        }
    }

    pub fn drain(&mut self) -> Vec<AgentEvent> {
        let mut v = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            v.push(e.event);
        }
        v
    }

    /// Answer every human request with `f` until the run ends.
    pub fn answer_with(
        &self,
        f: impl Fn(&HumanRequestKind) -> HumanResponse + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let approvals = self.approvals.clone();
        tokio::spawn(async move {
            loop {
                let req = approvals.next_pending().await;
                let _ = approvals.answer(&req.id, f(&req.kind));
            }
        })
    }
}

pub fn gate_decisions(events: &[AgentEvent]) -> Vec<(String, RiskTier, GateOutcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::GateDecision {
                tool,
                tier,
                outcome,
                ..
            } => Some((tool.clone(), *tier, *outcome)),
            _ => None,
        })
        .collect()
}
