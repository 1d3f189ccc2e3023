import type { ModelProfile } from "./ModelProfile";
import type { RoleProfiles } from "./RoleProfiles";
export type AppSettings = { profiles: Array<ModelProfile>, roles: RoleProfiles, default_mode: string, finish_verify: string, max_steps: number, max_duration_secs: number, token_budget: number, notifications: boolean, lang: string, };
