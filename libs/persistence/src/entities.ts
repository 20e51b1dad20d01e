/** Every TypeORM entity of the service, listed explicitly (ESM has no glob loading). */
export const ENTITIES: readonly Function[] = [];
