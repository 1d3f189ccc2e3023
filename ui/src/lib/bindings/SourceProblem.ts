export type SourceProblem = { adb_addr: string, code: string, message: string, };
