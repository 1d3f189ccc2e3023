export type AppInfo = { db_path: string, version: string, export_dir: string, };
