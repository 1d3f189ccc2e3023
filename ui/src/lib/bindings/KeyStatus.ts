export type KeyStatus = { entry: string, present: boolean, error: string | null, };
