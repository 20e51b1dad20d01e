// Issue 45: `helm upgrade` defeated Worker Versioning. The chart had one worker Deployment, rolled
// in place, and never promoted the new build: after an upgrade the new pods registered build N+1,
// which did not become current, and the rollout killed build N's pods, stranding the runs pinned
// to N and leaving new work waiting on N with no pollers. Here a release is rendered as Helm would
// install it and upgrade it twice, each revision from the previous one's values as `helm upgrade
// --reuse-values` passes them, and what each revision keeps and creates is checked; then the same
// with the Temporal Worker Controller. Every object is checked against Kubernetes' OpenAPI schemas
// and the controller's CRDs (scripts/k8s-schemas.sh).
import yaml from 'js-yaml';
import { loadConfig } from '#libs/config';
import {
  component,
  environmentOf,
  isHook,
  kubernetesSchemas,
  pods,
  render,
  renderRevision,
  type Container,
  type Manifest,
  type SchemaCheck,
} from '../support/helm-chart.js';

const env = (c: Container, name: string) => c.env.find((e) => e.name === name)?.value;
const workers = (ms: Manifest[]) => ms.filter((m) => m.kind === 'Deployment' && component(m) === 'worker');
const byBuild = (ms: Manifest[]) =>
  new Map(workers(ms).map((d) => [env(d.spec.template!.spec.containers[0]!, 'TEMPORAL_BUILD_ID')!, d]));
const promoteJob = (ms: Manifest[]) => ms.find((m) => m.kind === 'Job' && component(m) === 'promote');
/** The objects Helm deletes going from one revision to the next: in the first, not in the second,
 * and without helm.sh/resource-policy: keep (which Helm reads on the live object). */
const deletedBy = (from: Manifest[], to: Manifest[]) =>
  from
    .filter((m) => !isHook(m))
    .filter((m) => !to.some((n) => n.kind === m.kind && n.metadata.name === m.metadata.name))
    .filter((m) => m.metadata.annotations?.['helm.sh/resource-policy'] !== 'keep');

describe('the Helm chart across upgrades (issue 45)', () => {
  let schemas: SchemaCheck;
  beforeAll(async () => {
    schemas = await kubernetesSchemas();
  }, 600_000);

  it('keeps the old build running beside the new one, promotes the new one after it polls, and keeps each build until the operator lets it go', async () => {
    // Revision 1: the install, build A.
    const v1 = { image: { repository: 'registry.example.com/mas', tag: '1.0.0-a' }, worker: { buildId: '1.0.0+a' } };
    const r1 = await renderRevision(v1, { upgrade: false });
    expect([...byBuild(r1).keys()]).toEqual(['1.0.0+a']);
    expect(promoteJob(r1)!.metadata.annotations!['helm.sh/hook']).toMatch(/\bpost-install\b/);

    // Revision 2: an upgrade to build B, keeping A until it has drained.
    const v2 = {
      ...v1,
      image: { ...v1.image, tag: '1.1.0-b' },
      worker: { buildId: '1.1.0+b', keepBuilds: [{ id: '1.0.0+a', tag: '1.0.0-a' }] },
    };
    const r2 = await renderRevision(v2, { upgrade: true });
    const builds2 = byBuild(r2);
    expect([...builds2.keys()].sort()).toEqual(['1.0.0+a', '1.1.0+b']);
    // A's Deployment is the same object with the same pods: not replaced, not rolled.
    const a1 = byBuild(r1).get('1.0.0+a')!;
    const a2 = builds2.get('1.0.0+a')!;
    expect(a2.metadata.name).toBe(a1.metadata.name);
    expect(a2.spec.selector).toEqual(a1.spec.selector);
    expect(a2.spec.template).toEqual(a1.spec.template);
    expect(a2.spec.template!.spec.containers[0]!.image).toBe('registry.example.com/mas:1.0.0-a');
    expect(builds2.get('1.1.0+b')!.spec.template!.spec.containers[0]!.image).toBe('registry.example.com/mas:1.1.0-b');
    // Two builds' Deployments never select each other's pods.
    const [sa, sb] = [a2, builds2.get('1.1.0+b')!].map((d) => d.spec.selector as { matchLabels: object });
    expect(sa).not.toEqual(sb);
    expect(deletedBy(r1, r2).filter((m) => component(m) === 'worker')).toEqual([]);
    // The promote step, after the new build's pods are applied, with the new build's id, retried
    // until its pollers have registered it.
    const promote = promoteJob(r2)!;
    expect(promote.metadata.annotations!['helm.sh/hook']).toMatch(/\bpost-upgrade\b/);
    const c = (promote.spec.template as unknown as { spec: { containers: Container[] } }).spec.containers[0]!;
    expect(c.command).toEqual(['node', 'dist/apps/cli/src/main.js', 'deploy', 'promote', '1.1.0+b']);
    expect(c.image).toBe('registry.example.com/mas:1.1.0-b');
    expect(promote.spec.backoffLimit).toBeGreaterThanOrEqual(3);
    // `mas deploy` addresses the deployment named after the task queue the workers poll.
    expect(loadConfig(environmentOf(c)).temporal.taskQueue).toBe(
      env(a2.spec.template!.spec.containers[0]!, 'TEMPORAL_TASK_QUEUE'),
    );
    // The autoscaler follows the current build; the kept one has fixed replicas.
    const hpa = r2.find((m) => m.kind === 'HorizontalPodAutoscaler' && component(m) === 'worker')!;
    expect((hpa.spec.scaleTargetRef as { name: string }).name).toBe(builds2.get('1.1.0+b')!.metadata.name);
    expect(a2.spec.replicas).toBe(2);

    // Revision 3: a second upgrade, to C; A has drained and is no longer listed, B is kept.
    const v3 = {
      ...v2,
      image: { ...v2.image, tag: '1.2.0-c' },
      worker: { buildId: '1.2.0+c', keepBuilds: [{ id: '1.1.0+b', tag: '1.1.0-b' }] },
    };
    const r3 = await renderRevision(v3, { upgrade: true });
    const builds3 = byBuild(r3);
    expect([...builds3.keys()].sort()).toEqual(['1.1.0+b', '1.2.0+c']);
    expect(builds3.get('1.1.0+b')!.spec.template).toEqual(builds2.get('1.1.0+b')!.spec.template);
    expect(builds3.get('1.1.0+b')!.metadata.name).toBe(builds2.get('1.1.0+b')!.metadata.name);
    // A left the list: Helm would delete it, but for the keep policy every build's Deployment has.
    // It stays, running, until the operator deletes it (docs/deploy.md, "Upgrading").
    expect(deletedBy(r2, r3)).toEqual([]);
    for (const d of [...workers(r1), ...workers(r2), ...workers(r3)])
      expect(d.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
    expect(
      (
        promoteJob(r3)!.spec.template as unknown as { spec: { containers: Container[] } }
      ).spec.containers[0]!.command.at(-1),
    ).toBe('1.2.0+c');
    // worker-long polls unversioned (its activities are not replayed): one Deployment, rolled.
    const long = r3.filter((m) => m.kind === 'Deployment' && component(m) === 'worker-long');
    expect(long).toHaveLength(1);
    expect(env(long[0]!.spec.template!.spec.containers[0]!, 'TEMPORAL_BUILD_ID')).toBeUndefined();

    for (const m of [...r1, ...r2, ...r3]) expect(schemas(m)).toEqual([]);
  });

  it('refuses a build listed twice, or kept and current at once', async () => {
    await expect(
      render('--set', 'worker.buildId=2', '--set-json', 'worker.keepBuilds=[{"id":"1"},{"id":"1"}]'),
    ).rejects.toThrow(/build 1 is listed twice/);
    await expect(render('--set', 'worker.buildId=2', '--set-json', 'worker.keepBuilds=[{"id":"2"}]')).rejects.toThrow(
      /build 2 is listed twice, or is the current build/,
    );
  });

  it('with the Temporal Worker Controller: a WorkerDeployment whose build id and deployment name are the ones the worker registers, and no promote hook', async () => {
    const values = {
      image: { repository: 'registry.example.com/mas', tag: '1.1.0-b' },
      worker: { buildId: '1.1.0+b' },
      workerController: {
        enabled: true,
        rollout: { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '5m' }] },
      },
      temporal: { tls: { clientSecret: 'temporal-client' } },
    };
    const rendered = await renderRevision(values, { upgrade: true, namespace: 'agents' });
    expect(promoteJob(rendered)).toBeUndefined();
    expect(workers(rendered)).toEqual([]);
    expect(rendered.filter((m) => m.kind === 'HorizontalPodAutoscaler' && component(m) === 'worker')).toEqual([]);
    const wd = rendered.find((m) => m.kind === 'WorkerDeployment')!;
    expect(wd.apiVersion).toBe('temporal.io/v1alpha1');
    const spec = wd.spec as {
      workerOptions: { connectionRef: { name: string }; temporalNamespace: string; unsafeCustomBuildID: string };
      rollout: { strategy: string };
      sunset: { scaledownDelay: string; deleteDelay: string };
    };
    expect(spec.rollout.strategy).toBe('Progressive');
    expect(spec.sunset).toEqual({ scaledownDelay: '1h', deleteDelay: '24h' });
    const connection = rendered.find((m) => m.kind === 'Connection')!;
    expect(spec.workerOptions.connectionRef.name).toBe(connection.metadata.name);
    expect(connection.spec).toMatchObject({
      hostPort: 'temporal-frontend.temporal.svc:7233',
      mutualTLSSecretRef: { name: 'temporal-client' },
    });
    // The worker registers TEMPORAL_BUILD_ID in deployment TEMPORAL_TASK_QUEUE (apps/worker/src/
    // worker.ts); the controller expects the build id it was given in the deployment
    // <namespace>/<name> (its ComputeWorkerDeploymentName).
    const c = wd.spec.template!.spec.containers[0]!;
    const config = loadConfig(environmentOf(c));
    expect(config.temporal.versioning.buildId).toBe(spec.workerOptions.unsafeCustomBuildID);
    expect(spec.workerOptions.unsafeCustomBuildID).toMatch(/^[a-zA-Z0-9]([a-zA-Z0-9._-]*[a-zA-Z0-9])?$/);
    expect(config.temporal.taskQueue).toBe(`agents/${wd.metadata.name}`);
    // Every app starts and signals work on that queue, and worker-long's is beside it.
    for (const p of pods(rendered).filter((p) => p.app !== 'migrate')) {
      const t = loadConfig(environmentOf(p.template.spec.containers[0]!)).temporal;
      expect({ app: p.app, queue: t.taskQueue, long: t.longActivityTaskQueue }).toEqual({
        app: p.app,
        queue: 'agents/mas-agent',
        long: 'agents/mas-agent-long',
      });
    }
    for (const m of rendered) expect(schemas(m)).toEqual([]);

    // A controller before v1.7 takes the former kinds, with the same fields.
    const legacy = await render('--set', 'workerController.enabled=true', '--set', 'workerController.legacyKinds=true');
    expect(legacy.map((m) => m.kind)).toEqual(
      expect.arrayContaining(['TemporalWorkerDeployment', 'TemporalConnection']),
    );
    for (const m of legacy.filter((m) => m.apiVersion.startsWith('temporal.io/'))) expect(schemas(m)).toEqual([]);
  });

  it('renders every option within the schemas', async () => {
    const options = [
      ['--set', 'apiStreams.enabled=false'],
      ['--set', 'workerLong.enabled=false', '--set', 'console.enabled=false'],
      ['--set', 'networkPolicy.enabled=false', '--set', 'worker.autoscaling.enabled=false'],
      ['--set', 'apiStreams.httpRoute.enabled=true', '--set-json', 'apiStreams.httpRoute.parentRefs=[{"name":"gw"}]'],
      ['--set', 'temporal.insecure=true', '--set', 'kafka.insecure=true', '--set', 'postgres.insecure=true'],
      ['--set', 'workerController.enabled=true', '--set', 'workerController.apiKey=true'],
    ];
    for (const set of options) {
      const rendered = await render(...set);
      expect(rendered.length).toBeGreaterThan(20);
      for (const m of rendered) expect({ set, problems: schemas(m) }).toEqual({ set, problems: [] });
    }
  });

  it('checks objects against the schemas: a misspelt or misplaced field is refused', () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'x' },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: {
          metadata: { labels: { a: 'b' } },
          spec: { containers: [{ name: 'c', image: 'i', securityContext: { readOnlyRootFilesytem: true } }] },
        },
      },
    } as unknown as Manifest;
    expect(schemas(deployment).join('\n')).toMatch(/readOnlyRootFilesytem|additional properties/);
    const wd = yaml.load(
      'apiVersion: temporal.io/v1alpha1\nkind: WorkerDeployment\nmetadata: {name: x}\nspec: {rollout: {strategy: Sometimes}}',
    ) as Manifest;
    expect(schemas(wd).length).toBeGreaterThan(0);
  });
});
