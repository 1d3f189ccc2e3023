export type ExportResult = { path: string, bytes: number, };
