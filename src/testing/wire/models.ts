/** OpenAI `GET models` wire format of the simulated deployments: the list and one model. */

/** One `Model` object as `GET models` lists it. */
export function modelObject(id: string, created: number): Record<string, unknown> {
  return { id, object: 'model', created, owned_by: 'system' };
}

/** The `GET models` body: `{ object: 'list', data: Model[] }`. */
export function modelListBody(ids: readonly string[], created: number): Record<string, unknown> {
  return { object: 'list', data: ids.map((id) => modelObject(id, created)) };
}
