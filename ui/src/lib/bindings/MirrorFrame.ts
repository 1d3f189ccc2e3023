export type MirrorFrame = { seq: number, width: number, height: number, data_url: string, capture_ms: number, blocked: boolean, ts_ms: number, };
