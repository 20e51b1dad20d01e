// Refusals in the customer's words. The services' messages are written for the operator's CLI
// (they name its flags and the service's settings, e.g. WEBHOOK_ALLOW_HOSTS, --region); the
// console says what to change in its own forms instead. Each refusal is told by what was refused
// (the URL, the form's fields), never by the text of the service's message.

/** What is wrong with a URL typed into the console's Webhooks or MCP servers form, or null. */
export function urlProblem(raw: string, what: 'webhook' | 'mcp'): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `Enter a full URL, such as ${what === 'webhook' ? 'https://example.com/webhooks' : 'https://mcp.example.com/mcp'}.`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'The URL must start with https:// (or http://).';
  if (url.username || url.password)
    return what === 'webhook'
      ? "The URL must not hold a user name or password: every delivery is signed with the endpoint's secret, which your receiver checks."
      : 'The URL must not hold a user name or password: put credentials in the Auth header fields below, which are stored encrypted and never shown.';
  if (url.href.length > 2048) return 'The URL is too long (2048 characters at most).';
  return null;
}

/** A webhook URL the service refused for its address (a private or local one). */
export const privateAddressRefusal = (raw: string): string =>
  `Webhooks are sent to public addresses on the internet only, and ${hostOf(raw)} is not one. If your receiver has to be on a private network, ask your service's operator to allow its address.`;

const hostOf = (raw: string): string => {
  try {
    return new URL(raw).hostname;
  } catch {
    return raw;
  }
};

/** The model form's missing provider settings, named by the form's fields, or null. */
export function modelFormProblem(
  provider: string,
  form: { readonly region?: string; readonly resource?: string; readonly baseUrl?: string | null },
): string | null {
  if (provider === 'bedrock' && !form.region)
    return 'Amazon Bedrock needs a region: fill in Region (for example us-east-1).';
  if (provider === 'azure-openai' && !form.resource && !form.baseUrl)
    return 'Azure OpenAI needs your resource name or a base URL: fill in Resource (as in https://<resource>.openai.azure.com) or Base URL.';
  return null;
}
