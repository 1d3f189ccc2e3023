export type SelectedDevice = { adb_addr: string, serial: string, };
