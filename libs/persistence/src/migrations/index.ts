/** Every migration, in the order they apply. */
export const MIGRATIONS: readonly Function[] = [];
