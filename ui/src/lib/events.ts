// TypeScript view of crates/phoneagent-protocol/src/event.rs (the `EventEnvelope` stream).
// The protocol crate has no ts-rs derive (it is shared and Tauri-free), so these types are
// kept by hand and checked against real serialized events by src/lib/events.test.ts, whose
// fixtures are produced by the Rust test `event_fixtures_are_current` in src-tauri.
// Only the fields the UI reads are typed; unknown kinds are kept as `OtherEvent`.

export type Phase =
  | 'idle' | 'observing' | 'calibrating' | 'planning' | 'gating' | 'awaiting_human' | 'executing'
  | 'verifying' | 'recovering' | 'device_lost' | 'paused' | 'succeeded' | 'failed' | 'cancelled' | 'taken_over';

export interface ModelPoint { x: number; y: number }
export interface RuntimePoint { x: number; y: number }
export interface DevicePoint { x: number; y: number }
export interface MappedPoint { model: ModelPoint; canonical: [number, number]; runtime: RuntimePoint; device: DevicePoint }

export interface Action {
  action: string;
  element?: ModelPoint;
  start?: ModelPoint;
  end?: ModelPoint;
  text?: string;
  message?: string;
  question?: string;
  name?: string;
  seconds?: number;
  confirm?: boolean;
  duration_ms?: number | null;
  screen_description?: string | null;
  reason?: string | null;
  target_description?: string | null;
  confirm_irreversible?: boolean;
  sensitive?: boolean;
}

export interface TokenTotals { prompt_tokens: number; completion_tokens: number; cost_usd: number; calls: number }

export type HumanRequestKind =
  | { type: 'approval'; tool: string; target: string; tier: string; reasons: string[] }
  | { type: 'ask_user'; question: string }
  | { type: 'take_over'; message: string };

export type HumanResponse =
  | { type: 'approve' }
  | { type: 'reject'; note: string | null }
  | { type: 'answer'; text: string }
  | { type: 'hand_back' };

export type AgentEvent =
  | { kind: 'run_started'; task: string; serial: string; profile: string; model: string; base_url: string; protocol: string; mode: string; max_steps: number; max_duration_ms: number; demo: boolean }
  | { kind: 'phase'; phase: Phase }
  | { kind: 'observation'; screenshot: string; width: number; height: number; blocked: boolean; screen_seq: number; capture_ms: number; purpose: string }
  | { kind: 'model_call'; role: string; call_kind: string; model: string; prompt_tokens: number; completion_tokens: number; cost_usd: number; latency_ms: number; content: string; reasoning: string | null; error: string | null; run_totals: TokenTotals }
  | { kind: 'protocol_rejected'; attempt: number; error_kind: string; message: string }
  | { kind: 'action_proposed'; action: Action; points: MappedPoint[] }
  | { kind: 'gate_decision'; tool: string; tier: string; reasons: string[]; mode: string; outcome: string; decided_by: string; latency_ms: number; receipt: string | null }
  | { kind: 'human_requested'; request_id: string; request: HumanRequestKind; expires_at_ms: number; allowed_responses: string[] }
  | { kind: 'human_resolved'; request_id: string; response: HumanResponse; decided_by: string; latency_ms: number }
  | { kind: 'freshness'; outcome: string; target_changed: number; global_changed: number; rechecks: number }
  | { kind: 'action_dispatched'; action_type: string; device_points: DevicePoint[]; command_ok: boolean; error: string | null; message: string | null; duration_ms: number }
  | { kind: 'verification'; dispatched: boolean; command_ok: boolean; observable_effect: boolean; changed_fraction: number; warnings: string[] }
  | { kind: 'recovery'; outcome: string; code: string; action_type: string | null; hard_failures: number; soft_replans: number; detail: string }
  | { kind: 'device_lost'; serial: string; detail: string }
  | { kind: 'device_restored'; serial: string; waited_ms: number }
  | { kind: 'device_paths'; capture: string; input: string; note: string | null }
  | { kind: 'note'; message: string; task_board: { text: string; done: boolean }[] }
  | { kind: 'finish_review'; message: string; package: string; screen_seq: number }
  | { kind: 'finish_rejected'; by: string; message: string }
  | { kind: 'finish_verifier'; verdict: string; reason: string }
  | { kind: 'tool_result'; tool: string; status: string; text: string }
  | { kind: 'warning'; code: string; message: string }
  | { kind: 'run_finished'; status: string; termination_code: string; message: string; steps: number; duration_ms: number; tokens: TokenTotals; hard_failures: number; soft_replans: number };

export interface OtherEvent { kind: string; [k: string]: unknown }

export type EventEnvelope = { run_id: string; seq: number; ts_ms: number; step: number } & (AgentEvent | OtherEvent);
