export type DeviceEntry = { serial: string, state: string, model: string | null, transport: string, fix: string | null, adb_addr: string, is_virtual: boolean, };
