/** Refuses a database whose name lacks `test`: tests truncate tables and must never touch real data. */
export function assertTestDatabase(databaseUrl: string): void {
  const name = new URL(databaseUrl).pathname.replace(/^\//, '');
  if (!name.includes('test')) {
    throw new Error(`Refusing to run tests against database "${name}": its name must contain "test".`);
  }
}
