import { Accounts1763700000001 } from './1763700000001-accounts.js';
import { Metering1763700000002 } from './1763700000002-metering.js';
import { Files1763700000003 } from './1763700000003-files.js';

/** Every migration, in the order they apply. */
export const MIGRATIONS: readonly Function[] = [Accounts1763700000001, Metering1763700000002, Files1763700000003];
