/**
 * Routing of a simulated deployment's paths: which API a method and path under
 * `/<name>/openai/` (or OpenAI's own `/<name>/v1/`) or `/<name>/anthropic/` address.
 */

/** An API request a deployment answers (internal). */
export type Route =
  | { kind: 'chat' | 'responses' | 'embeddings' | 'messages' }
  | { kind: 'count_tokens' }
  | { kind: 'models' }
  | { kind: 'model'; id: string }
  | { kind: 'retrieve-response' | 'delete-response'; id: string };

/** The matched route, or why there is none. */
type RouteMatch =
  | { ok: true; route: Route }
  | { ok: false; status: 404 }
  | { ok: false; status: 405; allowed: string };

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/**
 * Matches `method` and the path segments after the deployment name. OpenAI routes work with and
 * without the `v1/` prefix (`new OpenAI({ baseURL: '<name>/openai/v1/' })`, `AzureOpenAI`'s
 * `/openai/responses`), plus the classic `deployments/<any>/chat/completions` and
 * `deployments/<any>/embeddings`; Anthropic routes are `v1/messages` and
 * `v1/messages/count_tokens`.
 */
export function matchRoute(method: string, segments: readonly string[]): RouteMatch {
  const [family, ...rest] = segments;
  const candidates: { method: string; route: Route }[] = [];
  if (family === 'openai') {
    let path = rest[0] === 'v1' ? rest.slice(1) : rest;
    if (path[0] === 'deployments' && path.length >= 3) path = path.slice(2);
    const joined = path.join('/');
    if (joined === 'chat/completions') candidates.push({ method: 'POST', route: { kind: 'chat' } });
    else if (joined === 'embeddings') {
      candidates.push({ method: 'POST', route: { kind: 'embeddings' } });
    } else if (joined === 'responses') {
      candidates.push({ method: 'POST', route: { kind: 'responses' } });
    } else if (path[0] === 'responses' && path.length === 2) {
      const id = decode(path[1] as string);
      candidates.push(
        { method: 'GET', route: { kind: 'retrieve-response', id } },
        { method: 'DELETE', route: { kind: 'delete-response', id } },
      );
    } else if (joined === 'models') candidates.push({ method: 'GET', route: { kind: 'models' } });
    else if (path[0] === 'models' && path.length === 2) {
      candidates.push({ method: 'GET', route: { kind: 'model', id: decode(path[1] as string) } });
    }
  } else if (family === 'anthropic') {
    const joined = rest.join('/');
    if (joined === 'v1/messages') candidates.push({ method: 'POST', route: { kind: 'messages' } });
    else if (joined === 'v1/messages/count_tokens') {
      candidates.push({ method: 'POST', route: { kind: 'count_tokens' } });
    }
  }
  if (candidates.length === 0) return { ok: false, status: 404 };
  const hit = candidates.find((candidate) => candidate.method === method);
  if (hit) return { ok: true, route: hit.route };
  return { ok: false, status: 405, allowed: candidates.map((c) => c.method).join(', ') };
}
