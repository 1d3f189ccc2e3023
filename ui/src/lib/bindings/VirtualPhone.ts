export type VirtualPhone = { adb_addr: string, serial: string, };
