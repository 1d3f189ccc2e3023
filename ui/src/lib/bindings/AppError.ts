export type AppError = { code: string, message: string, };
