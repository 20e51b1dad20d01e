const MASK = '[redacted]';
// A run of characters that could hold a key; punctuation that frames keys in messages splits runs.
const TOKEN = /[^\s"'`,;()<>[\]{}]+/g;
const FRAGMENT = 8;

/**
 * Removes an API key from text a provider wrote (error messages echo keys, whole or masked as
 * `sk-proj-****abcd`): the key itself, any token sharing an 8-character fragment with it, any
 * token masked with `***`, and anything shaped like a secret key (`sk-…`).
 */
export function redactSecret(text: string, secret: string | null | undefined): string {
  const withoutKey = secret ? text.split(secret).join(MASK) : text;
  return withoutKey.replace(TOKEN, (run) => {
    // Sentence punctuation after a key ("provided: sk-…abcd.") is not part of it.
    const [, token = run, tail = ''] = /^(.*?)([.:!?]*)$/s.exec(run) ?? [];
    return looksSecret(token, secret) ? `${MASK}${tail}` : run;
  });
}

function looksSecret(token: string, secret: string | null | undefined): boolean {
  if (token.includes('***')) return true;
  if (/(?:^|[^\w-])sk-[\w-]{16,}/.test(token)) return true;
  if (!secret || secret.length < FRAGMENT || token.length < FRAGMENT) return false;
  for (let i = 0; i + FRAGMENT <= token.length; i++) {
    if (secret.includes(token.slice(i, i + FRAGMENT))) return true;
  }
  return false;
}
