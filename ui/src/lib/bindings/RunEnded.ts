export type RunEnded = { run_id: string, status: string, termination_code: string, message: string, };
