/** Kafka topics (DESIGN.md section 3). Keep in step with scripts/stack/kafka-topics.mjs. */
export const TOPICS = {
  /** Every domain event; key = stream id. */
  events: 'mas.events.v1',
  /** One usage event per charged or token-consuming step; key = project id. The billing contract. */
  usage: 'mas.usage.v1',
  /** Live stream events of agent runs; key = request id; short retention. */
  stream: 'mas.stream.v1',
} as const;

export type Topic = (typeof TOPICS)[keyof typeof TOPICS];
