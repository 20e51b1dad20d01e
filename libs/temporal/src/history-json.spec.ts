import proto from '@temporalio/proto';
import { historyFromJson, historyToJson } from './history-json.js';

describe('history JSON', () => {
  it("writes Temporal's history JSON (string ids, enum names, base64 payloads) and reads it back", () => {
    const history = proto.temporal.api.history.v1.History.fromObject({
      events: [
        {
          eventId: 1,
          eventType: 1,
          workflowExecutionStartedEventAttributes: {
            workflowType: { name: 'agentRequestWorkflow' },
            input: {
              payloads: [{ metadata: { encoding: Buffer.from('binary/encrypted') }, data: Buffer.from('sealed') }],
            },
          },
        },
      ],
    });
    const json = historyToJson(history);
    expect(json).toEqual({
      events: [
        {
          eventId: '1',
          eventType: 'EVENT_TYPE_WORKFLOW_EXECUTION_STARTED',
          workflowExecutionStartedEventAttributes: {
            workflowType: { name: 'agentRequestWorkflow' },
            input: { payloads: [{ metadata: { encoding: 'YmluYXJ5L2VuY3J5cHRlZA==' }, data: 'c2VhbGVk' }] },
          },
        },
      ],
    });
    const back = historyFromJson(JSON.parse(JSON.stringify(json)));
    expect(Number(back.events![0]!.eventId)).toBe(1);
    expect(
      Buffer.from(back.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]!.data!).toString(),
    ).toBe('sealed');
  });

  it('refuses what is not a history', () => {
    expect(() => historyFromJson({ events: [{ eventId: 'x' }] })).toThrow();
  });
});
