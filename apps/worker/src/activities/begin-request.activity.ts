import { offeredTools, type AgentActivities } from '#libs/contracts';
import type { MeteringService } from '#libs/metering';
import type { BuiltinToolActivities } from './builtin-tools.activity.js';
import type { ConversationActivityHandlers } from './conversation.activity.js';

/**
 * A request's first step as one local activity (one round trip from the workflow instead of three):
 * admission in libs/metering's transaction (or, for a request the api admitted, its pickup), then the built-in tools of its capabilities and its
 * conversation. Each part is idempotent, so a retried attempt changes nothing twice. A conversation
 * that cannot be opened (the stored message expired) is answered as a refusal after admission: the
 * workflow's failed stop then settles the reservation at 0.
 */
export class BeginRequestActivity {
  constructor(
    private readonly metering: MeteringService,
    private readonly tools: BuiltinToolActivities,
    private readonly conversations: ConversationActivityHandlers,
  ) {}

  readonly beginRequest: AgentActivities['beginRequest'] = async (input) => {
    const { requestId, projectId } = input;
    // Admitted by the api (DESIGN.md section 10): taken up here; a request of a previous release
    // (its workflow started, not admitted by the api) is admitted here.
    const admission = input.admitted
      ? await this.metering.pickUp({ requestId, projectId, acceptBy: input.acceptBy })
      : await this.metering.admit({
          requestId,
          projectId,
          credits: input.credits,
          monthlyQuota: input.monthlyQuota,
          acceptBy: input.acceptBy,
        });
    if (!admission.ok) return admission;
    const { tools: builtin, notes } = await this.tools.builtinTools({ capabilities: input.capabilities, projectId });
    const opened = await this.conversations.open({
      projectId,
      conversationId: requestId,
      tools: offeredTools(input.customTools, builtin),
      history: input.history,
      message: input.message,
    });
    if (!opened.ok)
      return { ok: false, error: opened.error, balance: admission.balance, requestsUsed: admission.requestsUsed };
    return { ...admission, builtin, notes, length: opened.length };
  };
}
