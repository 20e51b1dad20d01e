import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DataSource } from 'typeorm';
import { requireTemporalAddress } from '#libs/config';
import { createKafka } from '#libs/kafka';
import { dataSourceOptions } from '#libs/persistence';
import { sourceBundlerOptions } from '../../apps/worker/src/workflow-bundle.js';
import * as activities from '../fixtures/stack-check.activities.js';
import { testConfig } from '../support/config.js';

const config = testConfig();
const temporalAddress = requireTemporalAddress(config);

describe('the local stack is real', () => {
  it('writes and reads a row in PostgreSQL', async () => {
    const db = new DataSource(dataSourceOptions(config));
    await db.initialize();
    try {
      await db.query('create temporary table stack_check (id uuid primary key, note text not null)');
      const id = randomUUID();
      await db.query('insert into stack_check (id, note) values ($1, $2)', [id, 'written']);
      const rows: { note: string }[] = await db.query('select note from stack_check where id = $1', [id]);
      expect(rows).toEqual([{ note: 'written' }]);
      await expect(db.query('insert into stack_check (id, note) values ($1, $2)', [id, 'again'])).rejects.toMatchObject(
        { code: '23505' },
      );
    } finally {
      await db.destroy();
    }
  });

  it('produces and consumes a message on Kafka', async () => {
    const kafka = createKafka(config, 'stack-check');
    const topic = `stack-check-${randomUUID()}`;
    const admin = kafka.admin();
    const producer = kafka.producer({ idempotent: true });
    const consumer = kafka.consumer({ groupId: `stack-check-${randomUUID()}` });
    await Promise.all([admin.connect(), producer.connect(), consumer.connect()]);
    try {
      await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
      const value = JSON.stringify({ id: randomUUID() });
      await producer.send({ topic, acks: -1, messages: [{ key: 'k', value }] });
      await consumer.subscribe({ topic, fromBeginning: true });
      const received = await new Promise<string>((resolve) => {
        void consumer.run({ eachMessage: async ({ message }) => resolve(message.value?.toString() ?? '') });
      });
      expect(received).toBe(value);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.disconnect();
    }
  });

  it('runs a workflow that runs an activity on Temporal', async () => {
    const taskQueue = `stack-check-${randomUUID()}`;
    const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
    const connection = await Connection.connect({ address: temporalAddress });
    try {
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace: config.temporal.namespace,
        taskQueue,
        workflowsPath: fileURLToPath(new URL('../fixtures/stack-check.workflow.ts', import.meta.url)),
        bundlerOptions: sourceBundlerOptions(),
        activities,
      });
      const client = new Client({ connection, namespace: config.temporal.namespace });
      const result = await worker.runUntil(
        client.workflow.execute('stackCheckWorkflow', {
          taskQueue,
          workflowId: `stack-check-${randomUUID()}`,
          args: [{ name: 'stack' }],
        }),
      );
      expect(result).toBe('hello stack (attempt 1) from a workflow');
    } finally {
      await connection.close();
      await nativeConnection.close();
    }
  });
});
