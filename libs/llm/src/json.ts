/** A plain JSON object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Tool-call arguments as the providers send them: a JSON string (OpenAI, streamed Anthropic) or an
 * object. Empty, malformed or non-object arguments become `{}` rather than failing the turn: the
 * tool then rejects the arguments and the model sees why and can call it again, which is what an
 * agent loop wants from small local models that sometimes emit broken JSON.
 */
export function toolArguments(raw: unknown): Record<string, unknown> {
  if (isRecord(raw)) return raw;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return isRecord(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** A non-negative integer from a usage field, 0 when the provider left it out. */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}
