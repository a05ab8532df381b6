/** Hosts of Azure OpenAI resources (and of Foundry's OpenAI-compatible endpoints). */
const AZURE_OPENAI_HOST =
  /\.(openai\.azure\.com|cognitiveservices\.azure\.com|services\.ai\.azure\.com)$/i;

/**
 * The problem of an `openai` deployment's `baseURL` that names an Azure resource without the
 * `/openai/v1/` path (the endpoint as the portal shows it): every call would get `404 Unknown
 * path`. The message gives the URL to write; `undefined` for any other URL.
 *
 * @example
 * ```ts
 * azurePathProblem('https://east.openai.azure.com/');
 * // 'is an Azure OpenAI endpoint without /openai/v1/ ...: write https://east.openai.azure.com/openai/v1/'
 * ```
 */
export function azurePathProblem(baseURL: string): string | undefined {
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return undefined;
  }
  if (!AZURE_OPENAI_HOST.test(url.hostname) || url.pathname.startsWith('/openai/')) {
    return undefined;
  }
  return `is an Azure OpenAI endpoint without /openai/v1/ (every call would get 404 Unknown path): write ${url.origin}/openai/v1/`;
}

/** Provider names people write for Azure OpenAI, which speaks the OpenAI API. */
const AZURE_PROVIDER = /^azure([-_ ]?openai)?$/i;

/**
 * The message of an unknown `provider`, with a hint where it names Azure OpenAI.
 *
 * @example
 * ```ts
 * providerMessage('azure'); // "must be 'openai' or 'anthropic': Azure OpenAI is provider: 'openai' ..."
 * ```
 */
export function providerMessage(provider: unknown): string {
  const base = `must be 'openai' or 'anthropic'`;
  return typeof provider === 'string' && AZURE_PROVIDER.test(provider.trim())
    ? `${base}: Azure OpenAI is provider: 'openai', with baseURL https://<resource>.openai.azure.com/openai/v1/`
    : base;
}
