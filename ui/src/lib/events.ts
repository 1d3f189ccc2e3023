// The event stream's types, generated from crates/phoneagent-protocol/src/event.rs by ts-rs
// (`cargo test` writes src/lib/bindings; scripts/test.sh fails when they are stale). Nothing
// here is kept by hand: this module only gathers the names the UI imports.
export type { AgentEvent } from './bindings/AgentEvent';
export type { EventEnvelope } from './bindings/EventEnvelope';
export type { Phase } from './bindings/Phase';
export type { Action } from './bindings/Action';
export type { ActionKind } from './bindings/ActionKind';
export type { ModelPoint } from './bindings/ModelPoint';
export type { RuntimePoint } from './bindings/RuntimePoint';
export type { DevicePoint } from './bindings/DevicePoint';
export type { MappedPoint } from './bindings/MappedPoint';
export type { TokenTotals } from './bindings/TokenTotals';
export type { HumanRequestKind } from './bindings/HumanRequestKind';
export type { HumanResponse } from './bindings/HumanResponse';
