import { addMetricsCollector, counter, gauge, metricsRegistry, metricsText } from './registry.js';

describe('the process registry', () => {
  it('registers a metric once however often it is defined (several apps in one process)', async () => {
    const a = counter({ name: 'mas_test_things_total', help: 'test', labelNames: ['kind'] as const });
    const b = counter({ name: 'mas_test_things_total', help: 'test', labelNames: ['kind'] as const });
    expect(b).toBe(a);
    a.inc({ kind: 'x' });
    b.inc({ kind: 'x' }, 2);
    expect(await metricsText()).toContain('mas_test_things_total{kind="x"} 3');
    expect(metricsRegistry.getMetricsAsArray().filter((m) => m.name === 'mas_test_things_total')).toHaveLength(1);
  });

  it('runs the collectors before a scrape, skips a failing one, and stops one that is removed', async () => {
    const g = gauge({ name: 'mas_test_level', help: 'test' });
    let reads = 0;
    const stop = addMetricsCollector(async () => {
      reads += 1;
      g.set(reads * 10);
    });
    const stopFailing = addMetricsCollector(() => Promise.reject(new Error('down')));
    expect(await metricsText()).toContain('mas_test_level 10');
    stop();
    stopFailing();
    expect(await metricsText()).toContain('mas_test_level 10');
    expect(reads).toBe(1);
  });

  it('exposes the Node.js process metrics', async () => {
    expect(await metricsText()).toContain('process_cpu_seconds_total');
  });
});
