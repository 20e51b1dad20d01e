import { PassThrough } from 'node:stream';
import { context, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { createLogger, NestPinoLogger, temporalLogger } from './logger.js';
import { addLogContext, runWithLogContext } from './log-context.js';

function capture(level: 'trace' | 'info' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const destination = new PassThrough();
  destination.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
      lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { logger: createLogger({ app: 'test', format: 'json', level, destination }), lines };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('the JSON logger', () => {
  it('writes one object a line with the level name, the app and the context ids known where it is written', async () => {
    const { logger, lines } = capture();
    logger.info('outside');
    await runWithLogContext({ project_id: 'p1' }, async () => {
      addLogContext({ request_id: 'r1' });
      await Promise.resolve();
      logger.info({ context: 'x' }, 'inside');
      await runWithLogContext({ workflow_id: 'agent-request-r1' }, async () => logger.warn('nested'));
    });
    await flush();
    expect(
      lines.map(({ level, app, msg, request_id, project_id, workflow_id }) => ({
        level,
        app,
        msg,
        request_id,
        project_id,
        workflow_id,
      })),
    ).toEqual([
      {
        level: 'info',
        app: 'test',
        msg: 'outside',
        request_id: undefined,
        project_id: undefined,
        workflow_id: undefined,
      },
      { level: 'info', app: 'test', msg: 'inside', request_id: 'r1', project_id: 'p1', workflow_id: undefined },
      {
        level: 'warn',
        app: 'test',
        msg: 'nested',
        request_id: 'r1',
        project_id: 'p1',
        workflow_id: 'agent-request-r1',
      },
    ]);
    expect(lines[0]).not.toHaveProperty('trace_id');
  });

  it("adds the active span's trace_id and span_id when a tracer has set one", async () => {
    const { logger, lines } = capture();
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const span = trace.wrapSpanContext({
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        traceFlags: TraceFlags.SAMPLED,
      });
      context.with(trace.setSpan(context.active(), span), () => logger.info('in a span'));
      logger.info('outside a span');
    } finally {
      context.disable();
    }
    await flush();
    expect(lines.map(({ msg, trace_id, span_id }) => ({ msg, trace_id, span_id }))).toEqual([
      { msg: 'in a span', trace_id: '0af7651916cd43dd8448eb211c80319c', span_id: 'b7ad6b7169203331' },
      { msg: 'outside a span', trace_id: undefined, span_id: undefined },
    ]);
  });

  it('redacts secret-named fields and key-shaped strings', async () => {
    const { logger, lines } = capture();
    const apiKey = `sk-mas_${'a1B2c3D4e5'.repeat(4)}xyz`;
    logger.info(
      { apiKey: 'plain-model-key', headers: { authorization: `Bearer ${apiKey}` }, model: { key: 'k' } },
      `called with ${apiKey}`,
    );
    await flush();
    const text = JSON.stringify(lines);
    expect(text).not.toContain('plain-model-key');
    expect(text).not.toContain(apiKey);
    expect(lines[0]).toMatchObject({
      apiKey: '[redacted]',
      headers: { authorization: '[redacted]' },
      model: { key: '[redacted]' },
      msg: 'called with [redacted]',
    });
  });
});

describe('NestPinoLogger', () => {
  it('maps Nest calls (message, context; error with a stack) to pino lines and honours Nest log levels', async () => {
    const { logger, lines } = capture('trace');
    const nest = new NestPinoLogger(logger);
    nest.log('started', 'outbox');
    nest.error('failed', 'Error: failed\n    at x (y.js:1:1)', 'relay');
    nest.error('plain', undefined, 'relay');
    nest.error(new Error('thrown'));
    nest.setLogLevels(['warn', 'error', 'fatal']);
    nest.log('dropped', 'outbox');
    nest.warn('kept', 'outbox');
    await flush();
    expect(lines.map(({ level, msg, context, stack }) => ({ level, msg, context, stack }))).toEqual([
      { level: 'info', msg: 'started', context: 'outbox', stack: undefined },
      { level: 'error', msg: 'failed', context: 'relay', stack: 'Error: failed\n    at x (y.js:1:1)' },
      { level: 'error', msg: 'plain', context: 'relay', stack: undefined },
      { level: 'error', msg: 'thrown', context: undefined, stack: undefined },
      { level: 'warn', msg: 'kept', context: 'outbox', stack: undefined },
    ]);
    expect(lines[3]).toMatchObject({ err: { message: 'thrown', type: 'Error' } });
  });

  it('gives Temporal runtime lines their workflow id as workflow_id', async () => {
    const { logger, lines } = capture();
    temporalLogger(logger).info('Workflow started', { workflowId: 'agent-request-r9', sdkComponent: 'worker' });
    temporalLogger(logger).debug('below the level');
    temporalLogger(logger).warn('Activity failed', { error: new Error('boom') });
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        msg: 'Workflow started',
        workflow_id: 'agent-request-r9',
        sdkComponent: 'worker',
        context: 'temporal',
      }),
      expect.objectContaining({
        level: 'warn',
        msg: 'Activity failed',
        err: expect.objectContaining({ message: 'boom', type: 'Error' }),
      }),
    ]);
  });
});
