export type StartRunRequest = { task: string, profile: string, max_steps: number, mode: string, };
