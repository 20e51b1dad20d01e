import { spawn } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { eventually } from './eventually.js';

/** A private Temporal dev server (in memory) with its Web UI, started by a test. */
export interface DevTemporal {
  /** host:port of its frontend, as TEMPORAL_ADDRESS takes it. */
  readonly address: string;
  readonly uiUrl: string;
  close(): Promise<void>;
}

/** A port free on loopback now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts the local stack's Temporal CLI (`$MAS_HOME/bin/temporal`, built by `npm run stack -- up`)
 * as a second dev server on free ports, with the stack's search attributes and dynamic config, and
 * its UI's codec endpoint set to `codecEndpoint` (the flags of scripts/stack.sh). For tests that
 * need a server flag the shared one was not started with.
 */
export async function startDevTemporal(options: { codecEndpoint: string }): Promise<DevTemporal> {
  const bin = join(process.env['MAS_HOME'] ?? join(homedir(), '.cache/managed-agent-service'), 'bin/temporal');
  const [port, uiPort] = [await freePort(), await freePort()];
  const child = spawn(
    bin,
    [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(port),
      '--ui-port',
      String(uiPort),
      '--namespace',
      'default',
      '--log-level',
      'error',
      '--ui-codec-endpoint',
      options.codecEndpoint,
      '--search-attribute',
      'ProjectId=Keyword',
      '--search-attribute',
      'AgentStatus=Keyword',
      '--search-attribute',
      'Capabilities=KeywordList',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
      '--dynamic-config-value',
      'frontend.enableExecuteMultiOperation=true',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const close = async (): Promise<void> => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  const address = `127.0.0.1:${port}`;
  const uiUrl = `http://127.0.0.1:${uiPort}`;
  try {
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`${bin} exited with ${child.exitCode}`);
      const connection = await Connection.connect({ address, connectTimeout: '1 second' });
      try {
        const { status } = await connection.healthService.check({});
        if (status !== 1) throw new Error(`health status ${String(status)}`);
      } finally {
        await connection.close();
      }
      if (!(await fetch(uiUrl)).ok) throw new Error('the UI does not answer yet');
    }, 60_000);
  } catch (e) {
    await close();
    throw e;
  }
  return { address, uiUrl, close };
}
