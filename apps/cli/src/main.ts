import 'reflect-metadata';
import { configFromEnvironment } from '#libs/config';
import { runMigrations } from '#libs/persistence';

// The operator CLI. `migrate` applies pending database migrations.
const [command] = process.argv.slice(2);
if (command === 'migrate') {
  const ran = await runMigrations(configFromEnvironment());
  process.stdout.write(ran.length ? `applied ${ran.length} migration(s): ${ran.join(', ')}\n` : 'database is up to date\n');
} else {
  process.stderr.write('usage: mas migrate\n');
  process.exitCode = 2;
}
