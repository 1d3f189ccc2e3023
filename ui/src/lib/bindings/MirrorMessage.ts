import type { MirrorFrame } from "./MirrorFrame";
export type MirrorMessage = { "type": "frame", frame: MirrorFrame, } | { "type": "error", code: string, message: string, };
