import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { agentRequestWorkflowId } from '#libs/contracts';
import type { AppProcess } from '../support/app-process.js';
import { testConfig } from '../support/config.js';
import { ConsoleClient } from '../support/console-client.js';
import { freePort } from '../support/dev-temporal.js';
import { Fixtures } from '../support/fixtures.js';
import { request } from '../support/http.js';
import { buildImage, imageCommand, podman, runInImage } from '../support/image.js';
import { readSse } from '../support/sse.js';
import { connectTemporal } from '../support/temporal.js';

// The shipped image (DESIGN.md section 11, "shipping"; docs/deploy.md, "Building the image"): built
// from this repository by its Dockerfile with Debian's podman (scripts/image/build.sh, a base made
// from Debian's packages, since no registry can be reached here), then the api, the worker, the
// bulkhead's worker and the console run FROM THE IMAGE as a deployment runs them: a read-only root
// with a tmpfs on /tmp, the image's non-root user, the host's network to the local stack, this
// file's own task queues. The image is built here rather than in scripts/test.sh so that the file
// alone (wt-jest, a CI job) tests what it names, and a machine where podman cannot run fails this
// file with the reason instead of stopping the whole run; MAS_IMAGE names an image built already.
const IMAGE_BUILD_TIMEOUT_MS = 30 * 60_000;
const root = new URL('../..', import.meta.url).pathname;
const queue = `e2e-image-${randomUUID()}`;
const longQueue = `e2e-image-long-${randomUUID()}`;
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

/** Runs a one-off command in the image (the CLI) to its end; what it printed. */
async function runOnce(image: string, argv: string[], env: Record<string, string>): Promise<string> {
  const run = runInImage(image, argv, env);
  const [code] = (await once(run.process, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`${argv.join(' ')} exited ${code}:\n${run.lines.join('\n')}`);
  return run.lines.join('\n');
}

describe('the image, built by the Dockerfile and run with podman', () => {
  const config = testConfig();
  const apps: AppProcess[] = [];
  let image: string;
  let fixtures: Fixtures;
  let apiUrl: string;
  let consoleUrl: string;
  let api: ReturnType<typeof runInImage>;
  const common = {
    TEMPORAL_TASK_QUEUE: queue,
    TEMPORAL_LONG_ACTIVITY_TASK_QUEUE: longQueue,
    // As the tests' in-process workers: one worker deployment per test queue would pile up on the
    // shared server (test/support/worker.ts); the build id is checked in the image instead.
    TEMPORAL_WORKER_VERSIONING: 'false',
    RECONCILER_INTERVAL_SECONDS: '0',
  };

  beforeAll(async () => {
    image = process.env.MAS_IMAGE || (await buildImage('localhost/managed-agent-service:latest'));
  }, IMAGE_BUILD_TIMEOUT_MS);

  beforeAll(async () => {
    if (!image) throw new Error('there is no image to run: its build failed (the first error says why)');
    fixtures = await Fixtures.open(config);
    const [apiPort, consolePort] = [await freePort(), await freePort()];
    apiUrl = `http://127.0.0.1:${apiPort}`;
    consoleUrl = `http://127.0.0.1:${consolePort}`;
    const worker = runInImage(image, imageCommand('worker').argv, { ...common, ...imageCommand('worker').env });
    const long = runInImage(image, imageCommand('worker-long').argv, {
      ...common,
      ...imageCommand('worker-long').env,
    });
    api = runInImage(image, imageCommand('api').argv, {
      ...common,
      ...imageCommand('api').env,
      PORT: String(apiPort),
      PUBLIC_BASE_URL: apiUrl,
    });
    const consoleApp = runInImage(image, imageCommand('console').argv, {
      ...imageCommand('console').env,
      CONSOLE_PORT: String(consolePort),
      CONSOLE_PUBLIC_URL: consoleUrl,
    });
    apps.push(worker, long, api, consoleApp);
    await Promise.all([
      worker.started(/polling task queue/),
      long.started(/polling task queue .*long activities only/),
      api.started(/listening on/),
      consoleApp.started(/listening on/),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()));
    await fixtures?.close();
  }, 120_000);

  it('runs as a non-root user on a root it cannot write, with the build id of what it was built from', async () => {
    const inspect = await podman(['image', 'inspect', '--format', '{{.Config.User}}', image]);
    expect(inspect.stdout.trim()).toBe('1000:1000');
    const inApi = await podman(['exec', api.name, 'sh', '-c', 'id -u; touch /app/x 2>&1; touch /tmp/x && echo tmp']);
    expect(inApi.stdout).toMatch(/^1000\n.*Read-only file system\ntmp\n$/);

    const { version } = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { version: string };
    const built = await podman(['run', '--rm', image, 'cat', '/app/dist/workflows/build-id']);
    const label = await podman([
      'image',
      'inspect',
      '--format',
      '{{index .Config.Labels "org.opencontainers.image.version"}}',
      image,
    ]);
    const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
    // The build's inputs, as scripts/image/build.sh names them.
    const inputs = ['Dockerfile', '.dockerignore', 'package.json', 'package-lock.json', 'tsconfig.json'];
    inputs.push('tsconfig.build.json', 'scripts/bundle-workflows.mjs', 'apps', 'libs', 'workflows');
    const clean = git('status', '--porcelain', '--', ...inputs) === '';
    if (process.env.MAS_IMAGE === undefined && clean)
      expect(built.stdout.trim()).toBe(`${version}+${git('rev-parse', '--short=12', 'HEAD')}`);
    // Inputs with changes: no commit's id, the workflow bundle's hash instead.
    else expect(built.stdout.trim()).toMatch(new RegExp(`^${version.replaceAll('.', '\\.')}\\+[0-9a-f]{12}`));
    if (label.stdout.trim()) expect(label.stdout.trim()).toBe(built.stdout.trim());
  });

  it('answers a one-shot request', async () => {
    const { auth } = await fixtures.project({ credits: 10 });
    const res = await request(apiUrl, 'POST', '/v1/agent', { headers: auth, body: { message: 'Hello there' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', message: 'You said: "Hello there"' });
    expect(res.body._compute_instance).toBe(`default/${queue}`);
  });

  it('pauses for a custom tool and resumes with its output', async () => {
    const { auth } = await fixtures.project({ credits: 10 });
    const first = await request(apiUrl, 'POST', '/v1/agent', {
      headers: auth,
      body: { message: 'What is the weather? use get_weather {"city":"Oslo"}', tools: [weatherTool] },
    });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      status: 'requires_tool_outputs',
      tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }],
    });
    const second = await request(apiUrl, 'POST', `/v1/agent/${first.body.id}/tool-outputs`, {
      headers: auth,
      body: {
        tool_outputs: [{ tool_call_id: first.body.tool_calls[0].id, output: 'Sunny, 21 C' }],
        _compute_instance: first.body._compute_instance,
      },
    });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ status: 'completed', message: expect.stringContaining('Sunny, 21 C') });
  });

  it('answers a message in a session', async () => {
    const { auth } = await fixtures.project({ credits: 10 });
    const session = await request(apiUrl, 'POST', '/v1/sessions', { headers: auth });
    expect(session.status).toBe(200);
    const res = await request(apiUrl, 'POST', `/v1/sessions/${session.body.id}/messages`, {
      headers: auth,
      body: { message: 'Hello session' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', message: 'You said: "Hello session"' });
  });

  // A streamed model call runs on the bulkhead's queue: this answers only with worker-long up.
  it('streams a request, its model call on the long-activity worker', async () => {
    const { auth } = await fixtures.project({ credits: 10 });
    const res = await readSse(`${apiUrl}/v1/agent`, {
      method: 'POST',
      headers: auth,
      body: { message: 'Hello stream', stream: true },
    });
    expect(res.status).toBe(200);
    const tokens = res.events.filter((e) => e.event === 'token');
    expect(tokens.length).toBeGreaterThan(0);
    expect(tokens.map((t) => t.data.content).join('')).toBe('You said: "Hello stream"');
    expect(res.events.at(-1)).toMatchObject({ event: 'done', data: { status: 'completed' } });
    const temporal = await connectTemporal(config);
    try {
      const id = res.headers.get('x-request-id')!;
      const { events } = await temporal.client.workflow.getHandle(agentRequestWorkflowId(id)).fetchHistory();
      const scheduled = (events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes ?? []);
      expect(scheduled.map((a) => [a.activityType?.name, a.taskQueue?.name])).toEqual([['callModel', longQueue]]);
    } finally {
      await temporal.connection.close();
    }
  });

  it("signs in to the console with an account the image's CLI invited", async () => {
    const { project } = await fixtures.project({ credits: 10 });
    const email = `image-${randomUUID()}@example.com`;
    const printed = await runOnce(
      image,
      ['node', 'dist/apps/cli/src/main.js', 'console', 'invite', project.id, email, '--role', 'owner', '--json'],
      { CONSOLE_PUBLIC_URL: consoleUrl },
    );
    const { link } = JSON.parse(printed.slice(printed.indexOf('{'))) as { link: string };
    expect(link.startsWith(`${consoleUrl}/`)).toBe(true);
    const browser = new ConsoleClient(consoleUrl);
    const password = randomBytes(18).toString('base64url');
    expect((await browser.setPassword(link, password)).status).toBeLessThan(400);
    const signedIn = await new ConsoleClient(consoleUrl).signIn(email, password);
    expect(signedIn.status).toBe(303);
    expect(signedIn.location).not.toMatch(/sign-in/);
  });
});
