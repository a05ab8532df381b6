/**
 * The warning for a deployment whose `baseURL` is plain `http://` to a host beyond this machine:
 * its API key would cross the network in the clear. Undefined for `https://`, for loopback
 * (`localhost`, `127.0.0.0/8`, `::1`: local proxies, simulated deployments) and without a
 * `baseURL`.
 *
 * @example
 * ```ts
 * plainHttpWarning('east', 'http://10.0.0.5/openai/v1/');
 * // "deployment 'east' sends its API key over plain http:// to 10.0.0.5: use https://"
 * plainHttpWarning('local', 'http://127.0.0.1:8080/v1'); // undefined
 * ```
 */
export function plainHttpWarning(name: string, baseURL: string | undefined): string | undefined {
  if (baseURL === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(baseURL);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:') return undefined;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback =
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
  return loopback
    ? undefined
    : `deployment '${name}' sends its API key over plain http:// to ${host}: use https://`;
}
