export type CheckView = { name: string, ok: boolean, detail: string, fix: string | null, };
