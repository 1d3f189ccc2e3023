import type { DeviceEntry } from "./DeviceEntry";
import type { SelectedDevice } from "./SelectedDevice";
import type { SourceProblem } from "./SourceProblem";
import type { VirtualPhone } from "./VirtualPhone";
export type DevicesView = { devices: Array<DeviceEntry>, problems: Array<SourceProblem>, selected: SelectedDevice | null, virtual_phone: VirtualPhone | null, };
