// Typed wrappers over the console's commands. Argument and result types come from the Rust
// types through ts-rs (./bindings, generated; see scripts/test-app.sh for the staleness check).
// The commands travel over ./transport: Tauri IPC in the desktop app, HTTP + WebSocket in a
// browser (`phoneagent web`).
import { asAppError, transport, type Unlisten } from './transport';
import type { HumanResponse } from './bindings/HumanResponse';
import type { AppError } from './bindings/AppError';
import type { AppInfo } from './bindings/AppInfo';
import type { AppSettings } from './bindings/AppSettings';
import type { CheckView } from './bindings/CheckView';
import type { DevicesView } from './bindings/DevicesView';
import type { ExportResult } from './bindings/ExportResult';
import type { KeyStatus } from './bindings/KeyStatus';
import type { LedgerRow } from './bindings/LedgerRow';
import type { MirrorMessage } from './bindings/MirrorMessage';
import type { PendingRequest } from './bindings/PendingRequest';
import type { PhoneRunView } from './bindings/PhoneRunView';
import type { RunEnded } from './bindings/RunEnded';
import type { RunSummary } from './bindings/RunSummary';
import type { SelectedDevice } from './bindings/SelectedDevice';
import type { StartRunRequest } from './bindings/StartRunRequest';
import type { VirtualPhone } from './bindings/VirtualPhone';
import type { DemoScenarioView } from './bindings/DemoScenarioView';
import type { EventEnvelope } from './events';
import type { ModelCatalog } from './bindings/ModelCatalog';
import type { ModelProfile } from './bindings/ModelProfile';
import type { FamilyView } from './bindings/FamilyView';
import type { ConnectionTestView } from './bindings/ConnectionTestView';
import type { SetupStatus } from './bindings/SetupStatus';
export type { ModelCatalog, ModelProfile, FamilyView, ConnectionTestView, SetupStatus };

import type { AutoReviewStatus } from './bindings/AutoReviewStatus';
import type { OverrideGrant } from './bindings/OverrideGrant';
import type { ApprovalReview } from './bindings/ApprovalReview';
import type { ApprovalPolicySettings } from './bindings/ApprovalPolicySettings';
import type { AutoReviewConfig } from './bindings/AutoReviewConfig';
export type { AutoReviewStatus, OverrideGrant, ApprovalReview, ApprovalPolicySettings, AutoReviewConfig };
export type { DemoScenarioView, PhoneRunView };
export type { HumanResponse, AppError, AppInfo, AppSettings, CheckView, DevicesView, ExportResult, KeyStatus, LedgerRow, MirrorMessage, PendingRequest, RunEnded, RunSummary, SelectedDevice, StartRunRequest, VirtualPhone };

export { asAppError };
/** What `onAgentEvent` / `onRunEnded` resolve to: call it to stop listening. */
export type UnlistenFn = Unlisten;

function call<T>(cmd: string, args?: Record<string, unknown>): Promise<T> {
  return transport().call<T>(cmd, args);
}

export const api = {
  appInfo: () => call<AppInfo>('get_app_info'),
  listDevices: () => call<DevicesView>('list_devices'),
  selectDevice: (adbAddr: string, serial: string) => call<SelectedDevice>('select_device', { adbAddr, serial }),
  addDirectDevice: (addr: string) => call<string>('add_direct_device', { addr }),
  removeDirectDevice: (serial: string) => call<void>('remove_direct_device', { serial }),
  startVirtualPhone: () => call<VirtualPhone>('start_virtual_phone'),
  readiness: () => call<CheckView[]>('device_readiness'),
  // `serial` (several phones run at once, issue #13): the phone a command is for — its serial,
  // or for the run controls a run id; left out, the selected phone (else the only busy one).
  mirrorStart: (onMessage: (m: MirrorMessage) => void, serial?: string) => transport().mirrorStart(onMessage, serial),
  mirrorStop: (serial?: string) => transport().mirrorStop(serial),
  takeOverTap: (x: number, y: number, serial?: string) => call<void>('take_over_tap', { x, y, serial }),
  takeOverSwipe: (x1: number, y1: number, x2: number, y2: number, durationMs: number, serial?: string) =>
    call<void>('take_over_swipe', { x1, y1, x2, y2, durationMs, serial }),
  pendingRequests: (serial?: string) => call<PendingRequest[]>('pending_requests', { serial }),
  answer: (id: string, answer: HumanResponse) => call<void>('answer_request', { id, answer }),
  startRun: (request: StartRunRequest) => call<SelectedDevice>('start_run', { request }),
  startDemo: (name: string, mode: string) => call<SelectedDevice>('start_demo', { name, mode }),
  demoScenarios: () => call<DemoScenarioView[]>('demo_scenarios'),
  stopRun: (serial?: string) => call<void>('stop_run', { serial }),
  pauseRun: (paused: boolean, serial?: string) => call<void>('pause_run', { paused, serial }),
  approvalStatus: (serial?: string) => call<AutoReviewStatus | null>('approval_status', { serial }),
  grantOverride: (requestId: string, serial?: string) => call<OverrideGrant>('grant_override', { requestId, serial }),
  setAutoReviewSuspended: (suspended: boolean, serial?: string) => call<AutoReviewStatus>('set_auto_review_suspended', { suspended, serial }),
  getApprovalPolicy: () => call<ApprovalPolicySettings>('get_approval_policy'),
  saveApprovalPolicy: (config: AutoReviewConfig) => call<void>('save_approval_policy', { config }),
  approvalReviews: (runId: string) => call<ApprovalReview[]>('approval_reviews', { runId }),
  setLanguage: (lang: 'en' | 'zh') => call<void>('set_language', { lang }),
  activeRun: (serial?: string) => call<string | null>('active_run', { serial }),
  activeRuns: () => call<PhoneRunView[]>('active_runs'),
  recentTasks: () => call<string[]>('recent_tasks'),
  getSettings: () => call<AppSettings>('get_settings'),
  saveSettings: (settings: AppSettings) => call<void>('save_settings', { settings }),
  keyStatus: (entries: string[]) => call<KeyStatus[]>('key_status', { entries }),
  setApiKey: (entry: string, key: string) => call<void>('set_api_key', { entry, key }),
  deleteApiKey: (entry: string) => call<boolean>('delete_api_key', { entry }),
  modelCatalog: () => call<ModelCatalog>('model_catalog'),
  profileFamily: (profile: ModelProfile) => call<FamilyView>('profile_family', { profile }),
  testConnection: (profile: ModelProfile) => call<ConnectionTestView>('test_connection', { profile }),
  setupStatus: (profile: string) => call<SetupStatus>('setup_status', { profile }),
  listRuns: (limit: number) => call<RunSummary[]>('list_runs', { limit }),
  runEvents: (runId: string) => call<EventEnvelope[]>('run_events', { runId }),
  screenshot: (sha256: string) => call<string>('get_screenshot', { sha256 }),
  ledger: (runId: string) => call<LedgerRow[]>('run_ledger', { runId }),
  exportRun: (runId: string, format: 'json' | 'html') => call<ExportResult>('export_run', { runId, format }),
};

export function onAgentEvent(f: (e: EventEnvelope) => void): Promise<UnlistenFn> {
  return transport().listen<EventEnvelope>('agent-event', f);
}

export function onRunEnded(f: (e: RunEnded) => void): Promise<UnlistenFn> {
  return transport().listen<RunEnded>('run-ended', f);
}

/** URL of a picture: the app's `pa:` scheme (`pa://localhost/…`, or `http://pa.localhost/…`
 *  where the webview needs it), or `/pa/…` of `phoneagent web`: pictures never travel as base64. */
function picture(path: string): string {
  return transport().pictureUrl(path);
}

/** The mirror's frame `seq` (a JPEG of at most 960 px): of phone `serial`, else of the selected
 *  phone. */
export function mirrorFrameUrl(seq: number, serial?: string): string {
  // Not escaped here: each transport escapes the path (`127.0.0.1:5555` → `127.0.0.1%3A5555`).
  return picture(serial ? `mirror/${serial}/${seq}` : `mirror/${seq}`);
}

/** True where every phone can have its own mirror at once (the desktop app; `phoneagent web`
 *  mirrors the selected phone only). */
export function multiMirror(): boolean {
  return transport().kind === 'tauri';
}

/** A stored screenshot by hash (content address): `thumb` (360 px JPEG, the timeline),
 *  `view` (960 px JPEG, History's large view) or `shot` (the original, on demand). */
export function screenshotUrl(sha256: string, size: 'thumb' | 'view' | 'shot' = 'thumb'): Promise<string> {
  return /^[0-9a-f]{64}$/.test(sha256) ? Promise.resolve(picture(`${size}/${sha256}`)) : Promise.reject(new Error('not a screenshot hash'));
}
