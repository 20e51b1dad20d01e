import { createHash } from 'node:crypto';
import type { createMistral } from '@ai-sdk/mistral';
import type { GuardedFetch } from '#libs/egress';
import { ModelError } from './model-error.js';
import { modelFetch } from './model-fetch.js';
import type { ModelRequest } from './model-request.js';
import { baseUrlOf } from './provider-errors.js';

/** The providers reached through the AI SDK (every one but `scripted`). */
export type SdkProvider = Exclude<ModelRequest['provider'], 'scripted'>;

/** The AI SDK's language-model specification (LanguageModelV3), which every provider package implements.
 * Each provider package is imported when first used, so the api (which only validates settings
 * through this lib) and a worker that calls one provider load no other. */
export type LanguageModel = ReturnType<ReturnType<typeof createMistral>>;

const OPENAI_URL = 'https://api.openai.com/v1';
const ANTHROPIC_URL = 'https://api.anthropic.com';
const GOOGLE_URL = 'https://generativelanguage.googleapis.com/v1beta';
const MISTRAL_URL = 'https://api.mistral.ai/v1';

/** Models kept for reuse, by a hash of everything that configures them (the secrets included). */
const MODEL_CACHE_SIZE = 256;
const models = new Map<string, LanguageModel>();

/**
 * The AI SDK model for a request, reused across calls with the same configuration: building a
 * provider costs as much CPU as a whole call (its headers, user agent and URL functions).
 */
export async function cachedLanguageModel(req: ModelRequest & { provider: SdkProvider }): Promise<LanguageModel> {
  const key = createHash('sha256')
    .update(
      JSON.stringify([
        req.provider,
        req.model,
        req.baseUrl,
        req.allowHosts,
        req.apiKey,
        req.settings ?? null,
        req.awsCredentials ?? null,
      ]),
    )
    .digest('base64');
  let model = models.get(key);
  if (model) {
    // Map order is insertion order: re-inserting makes this the most recently used.
    models.delete(key);
  } else {
    model = await languageModel(req);
    if (models.size >= MODEL_CACHE_SIZE) models.delete(models.keys().next().value as string);
  }
  models.set(key, model);
  return model;
}

/**
 * The AI SDK model for a request. Every setting is passed explicitly: the SDK's providers fall back
 * to environment variables (OPENAI_API_KEY, AWS_REGION, AWS_BEARER_TOKEN_BEDROCK, ...), and a
 * customer's call must never pick up the operator's credentials or endpoints. Every provider gets
 * the egress-guarded fetch: none reaches the network another way.
 */
export async function languageModel(req: ModelRequest & { provider: SdkProvider }): Promise<LanguageModel> {
  const apiKey = req.apiKey ?? '';
  const fetch = modelFetch(req.provider, req.allowHosts);
  switch (req.provider) {
    case 'openai': {
      const baseURL = baseUrlOf('openai', req.baseUrl, OPENAI_URL);
      // api.openai.com gets OpenAI's own client (Chat Completions, its token-limit rules); any
      // other base URL is an OpenAI-compatible server (Ollama, vLLM, llama.cpp, a proxy).
      if (new URL(baseURL).hostname === 'api.openai.com') {
        const { createOpenAI } = await import('@ai-sdk/openai');
        return createOpenAI({ apiKey, baseURL, fetch }).chat(req.model);
      }
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      return createOpenAICompatible({
        name: 'openai',
        baseURL,
        ...(req.apiKey ? { apiKey: req.apiKey } : {}),
        includeUsage: true,
        fetch,
      }).chatModel(req.model);
    }
    case 'anthropic': {
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      // The configured base URL is the API's origin (as the Messages API documents it), the SDK's ends in /v1.
      return createAnthropic({ apiKey, baseURL: `${baseUrlOf('anthropic', req.baseUrl, ANTHROPIC_URL)}/v1`, fetch })(
        req.model,
      );
    }
    case 'google': {
      const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
      return createGoogleGenerativeAI({ apiKey, baseURL: baseUrlOf('google', req.baseUrl, GOOGLE_URL), fetch })(
        req.model,
      );
    }
    case 'mistral': {
      const { createMistral } = await import('@ai-sdk/mistral');
      return createMistral({ apiKey, baseURL: baseUrlOf('mistral', req.baseUrl, MISTRAL_URL), fetch })(req.model);
    }
    case 'azure-openai':
      return azureModel(req, fetch);
    case 'bedrock':
      return bedrockModel(req, fetch);
  }
}

/**
 * Azure OpenAI: the model is the deployment name. The base URL (a gateway's, or a test server's)
 * stands for `https://<resource>.openai.azure.com/openai`; API version `v1` calls the v1 API below
 * it (`.../openai/v1/chat/completions`), a dated version the deployment's URL
 * (`.../openai/deployments/<deployment>/chat/completions?api-version=<version>`).
 */
async function azureModel(req: ModelRequest, fetch: GuardedFetch): Promise<LanguageModel> {
  const { resourceName, apiVersion = 'v1' } = req.settings ?? {};
  if (!req.baseUrl && !resourceName)
    throw new ModelError('azure-openai needs a resource name or a base URL', { kind: 'rejected' });
  const { createAzure } = await import('@ai-sdk/azure');
  const base = baseUrlOf('azure-openai', req.baseUrl, `https://${resourceName ?? ''}.openai.azure.com/openai`);
  if (apiVersion !== 'v1')
    return createAzure({
      apiKey: req.apiKey ?? '',
      baseURL: base,
      apiVersion,
      useDeploymentBasedUrls: true,
      fetch,
    }).chat(req.model);
  return createAzure({ apiKey: req.apiKey ?? '', baseURL: `${base}/v1`, apiVersion, fetch }).chat(req.model);
}

/** Amazon Bedrock (Converse API): SigV4 with the stored AWS credentials, or a Bedrock API key. */
async function bedrockModel(req: ModelRequest, fetch: GuardedFetch): Promise<LanguageModel> {
  const region = req.settings?.region;
  if (!region) throw new ModelError('bedrock needs a region', { kind: 'rejected' });
  const dnsSuffix = region.startsWith('cn-') ? 'amazonaws.com.cn' : 'amazonaws.com';
  const baseURL = baseUrlOf('bedrock', req.baseUrl, `https://bedrock-runtime.${region}.${dnsSuffix}`);
  const { createAmazonBedrock } = await import('@ai-sdk/amazon-bedrock');
  const aws = req.awsCredentials;
  if (aws) {
    // An empty apiKey keeps the SDK from reading AWS_BEARER_TOKEN_BEDROCK; the credentials provider from AWS_* variables.
    const credentials = {
      accessKeyId: aws.accessKeyId,
      secretAccessKey: aws.secretAccessKey,
      ...(aws.sessionToken ? { sessionToken: aws.sessionToken } : {}),
    };
    return createAmazonBedrock({
      apiKey: '',
      region,
      baseURL,
      credentialProvider: () => Promise.resolve(credentials),
      fetch,
    })(req.model);
  }
  if (!req.apiKey) throw new ModelError('bedrock needs AWS credentials or a Bedrock API key', { kind: 'rejected' });
  return createAmazonBedrock({ apiKey: req.apiKey, region, baseURL, fetch })(req.model);
}
