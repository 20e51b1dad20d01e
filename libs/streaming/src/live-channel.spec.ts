import type { ProducerRecord } from 'kafkajs';
import { KafkaLiveChannel, LIVE_BACKOFF_MS } from './live-channel.js';

const record: ProducerRecord = { topic: 't', messages: [{ value: 'x' }] };

/** A producer whose broker is down until `up` is set. */
function producer() {
  const state = { up: false, connects: 0, sent: 0 };
  return {
    state,
    connect: async () => {
      state.connects += 1;
      if (!state.up) throw new Error('ECONNREFUSED');
    },
    send: async () => {
      if (!state.up) throw new Error('broker gone');
      state.sent += 1;
      return [];
    },
    disconnect: async () => undefined,
  };
}

describe('KafkaLiveChannel', () => {
  it('never fails a send, and connects again once the broker is back', async () => {
    let now = 0;
    const p = producer();
    const channel = new KafkaLiveChannel(p, () => now);
    await expect(channel.send(record)).resolves.toBeUndefined();
    expect(p.state.connects).toBe(1);
    // Within the pause Kafka is not tried at all: tokens are not held up by a dead broker.
    await channel.send(record);
    expect(p.state.connects).toBe(1);
    p.state.up = true;
    now += LIVE_BACKOFF_MS + 1;
    await channel.send(record);
    expect(p.state).toMatchObject({ connects: 2, sent: 1 });
  });

  it('pauses after a send fails on a connected producer, then sends again', async () => {
    let now = 0;
    const p = producer();
    p.state.up = true;
    const channel = new KafkaLiveChannel(p, () => now);
    await channel.send(record);
    p.state.up = false;
    await channel.send(record);
    p.state.up = true;
    await channel.send(record);
    expect(p.state.sent).toBe(1);
    now += LIVE_BACKOFF_MS + 1;
    await channel.send(record);
    expect(p.state.sent).toBe(2);
  });
});
