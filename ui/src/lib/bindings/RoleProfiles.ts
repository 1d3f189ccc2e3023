export type RoleProfiles = { actor: string, verifier: string, safety_reviewer: string, auto_reviewer: string, };
