import { createHash } from 'node:crypto';

/** A UUID (version 8, name-based) derived from `parts`: the same step retried yields the same id,
 * so an activity that runs twice appends its event once. */
export function deterministicUuid(...parts: readonly (string | number)[]): string {
  const hash = createHash('sha256').update(parts.join('\u001f')).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x80;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
