/** A CloudEvents 1.0 event in structured JSON mode (content type application/cloudevents+json). */
export interface CloudEvent<T = unknown> {
  readonly specversion: '1.0';
  readonly id: string;
  readonly source: string;
  readonly type: string;
  readonly subject: string;
  readonly time: string;
  readonly datacontenttype: 'application/json';
  readonly data: T;
  /** Extension attributes (lower-case alphanumerics, CloudEvents 1.0 section 3.1.1). */
  readonly projectid: string;
  readonly correlationid: string;
  readonly causationid: string;
  /** Domain events (mas.events.v1) only: the event's version in its stream (the `subject`), so a
   * read model knows how far it has caught up with the event store. */
  readonly streamversion?: number;
}

/** The `source` of every event the service publishes. */
export const EVENT_SOURCE = '/managed-agent-service';

export function toCloudEvent<T>(input: {
  id: string;
  type: string;
  subject: string;
  time: Date;
  data: T;
  projectId: string;
  correlationId: string;
  causationId: string;
  streamVersion?: number;
}): CloudEvent<T> {
  return {
    specversion: '1.0',
    id: input.id,
    source: EVENT_SOURCE,
    type: input.type,
    subject: input.subject,
    time: input.time.toISOString(),
    datacontenttype: 'application/json',
    data: input.data,
    projectid: input.projectId,
    correlationid: input.correlationId,
    causationid: input.causationId,
    ...(input.streamVersion !== undefined ? { streamversion: input.streamVersion } : {}),
  };
}
