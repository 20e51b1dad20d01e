import { isModelProvider, MODEL_PROVIDERS, type ModelProvider, type ModelProviderSettings } from '#libs/contracts';

const REGION = /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d{1,2}$/;
const AZURE_RESOURCE = /^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}[a-zA-Z0-9]$/;
const AZURE_API_VERSION = /^(v1|\d{4}-\d{2}-\d{2}(-preview)?)$/;

/** Which settings apply to which provider. */
const SETTINGS_OF: Readonly<Record<ModelProvider, readonly (keyof ModelProviderSettings)[]>> = {
  openai: [],
  anthropic: [],
  google: [],
  mistral: [],
  'azure-openai': ['resourceName', 'apiVersion'],
  bedrock: ['region'],
  scripted: [],
};

/** A model configuration as an operator sets it (the secrets only as present or not). */
export interface ModelTarget {
  readonly provider: string;
  readonly model: string;
  readonly baseUrl: string | null;
  readonly settings: ModelProviderSettings;
  readonly hasKey: boolean;
  readonly hasAwsCredentials: boolean;
}

/** Why a model configuration cannot work, or null: checked when it is set, so a call never finds out. */
export function modelTargetProblem(target: ModelTarget): string | null {
  const { provider, settings } = target;
  if (!isModelProvider(provider)) return `unknown provider "${provider}" (providers: ${MODEL_PROVIDERS.join(', ')})`;
  if (!target.model.trim()) return 'a model name is required';
  const foreign = (Object.keys(settings) as (keyof ModelProviderSettings)[]).filter(
    (k) => settings[k] !== undefined && !SETTINGS_OF[provider].includes(k),
  );
  if (foreign.length > 0) return `${foreign.map(settingName).join(', ')} does not apply to provider "${provider}"`;
  if (target.baseUrl) {
    let url: URL;
    try {
      url = new URL(target.baseUrl);
    } catch {
      return `base URL "${target.baseUrl}" is not a URL`;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'base URL must be http or https';
  }
  if (target.hasAwsCredentials && provider !== 'bedrock') return `AWS credentials apply to provider "bedrock" only`;
  if (target.hasAwsCredentials && target.hasKey)
    return 'give bedrock either AWS credentials or a Bedrock API key, not both';
  switch (provider) {
    case 'scripted':
      return target.hasKey ? 'the scripted model takes no key' : null;
    case 'azure-openai':
      if (!settings.resourceName && !target.baseUrl)
        return 'provider "azure-openai" needs a resource name (--resource) or a base URL';
      if (settings.resourceName && target.baseUrl) return 'give azure-openai a resource name or a base URL, not both';
      if (settings.resourceName && !AZURE_RESOURCE.test(settings.resourceName))
        return `"${settings.resourceName}" is not an Azure resource name (letters, digits and hyphens, 2 to 64)`;
      if (settings.apiVersion && !AZURE_API_VERSION.test(settings.apiVersion))
        return `"${settings.apiVersion}" is not an Azure OpenAI API version (v1, or a date such as 2024-10-21)`;
      return target.hasKey ? null : 'provider "azure-openai" needs a model key';
    case 'bedrock':
      if (!settings.region) return 'provider "bedrock" needs a region (--region)';
      if (!REGION.test(settings.region)) return `"${settings.region}" is not an AWS region (e.g. us-east-1)`;
      return target.hasKey || target.hasAwsCredentials
        ? null
        : 'provider "bedrock" needs AWS credentials or a Bedrock API key';
    default:
      // A compatible server (or a proxy) may need no key; the providers' own APIs always do.
      return target.hasKey || target.baseUrl
        ? null
        : `provider "${provider}" needs a model key (or a base URL of a server that needs none)`;
  }
}

function settingName(key: keyof ModelProviderSettings): string {
  return { region: 'region', resourceName: 'resource name', apiVersion: 'API version' }[key];
}
