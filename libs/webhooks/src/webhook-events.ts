import { EVENT_TYPES, type WebhookEventType } from '#libs/contracts';

/** The domain event (mas.events.v1) behind each webhook event. */
const FROM_DOMAIN: Readonly<Record<string, WebhookEventType>> = {
  [EVENT_TYPES.agentRequestToolCallsRequested]: 'agent.requires_tool_outputs',
  [EVENT_TYPES.agentRequestCompleted]: 'agent.completed',
  [EVENT_TYPES.agentRequestFailed]: 'agent.failed',
  [EVENT_TYPES.agentRequestExpired]: 'agent.expired',
  [EVENT_TYPES.agentRequestCancelled]: 'agent.cancelled',
  [EVENT_TYPES.sessionExpired]: 'session.expired',
  [EVENT_TYPES.sessionEnded]: 'session.ended',
};

/** The webhook event a domain event triggers, if any. */
export const webhookEventOf = (domainEventType: string): WebhookEventType | undefined => FROM_DOMAIN[domainEventType];
