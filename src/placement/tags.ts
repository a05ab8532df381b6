/** The most tags one call may require: a header or body field is the caller's to fill. */
const MAX_CALL_TAGS = 16;
/** The longest tag; a tag is a word such as `eu` or `gdpr`, not a document. */
const MAX_TAG_LENGTH = 64;

/** What a tag may be: a word without blanks or commas (the header lists them comma-separated). */
const TAG_PATTERN = /^[^\s,]+$/;

/**
 * The tags a call requires, as one value: each tag once, sorted, and `key` joining them with
 * commas (the pools of a model carrying every tag are kept under it).
 *
 * @example
 * ```ts
 * const eu = tagSet(['gdpr', 'eu']); // { tags: ['eu', 'gdpr'], key: 'eu,gdpr' }
 * ```
 */
export interface TagSet {
  readonly tags: readonly string[];
  readonly key: string;
}

/**
 * The {@link TagSet} of a list of tags, or `undefined` for none; a {@link TypeError} names what
 * is wrong with a list that is not one of at most {@link MAX_CALL_TAGS} words. `more` (tags that
 * every call of a tenant requires, say) are added to the call's own.
 *
 * @example
 * ```ts
 * tagSet(['eu']); // { tags: ['eu'], key: 'eu' }
 * tagSet(['eu'], ['gdpr']); // { tags: ['eu', 'gdpr'], key: 'eu,gdpr' }
 * tagSet('eu'); // TypeError: tags must be a list of strings such as ['eu'], got string
 * ```
 */
export function tagSet(list: unknown, more?: readonly string[]): TagSet | undefined {
  if (list !== undefined && !Array.isArray(list)) {
    throw new TypeError(`tags must be a list of strings such as ['eu'], got ${typeof list}`);
  }
  const all = more === undefined || more.length === 0 ? list : [...(list ?? []), ...more];
  if (all === undefined || all.length === 0) return undefined;
  if (all.length > MAX_CALL_TAGS) {
    throw new TypeError(`tags may list at most ${MAX_CALL_TAGS} tags, got ${all.length}`);
  }
  for (const tag of all) {
    if (typeof tag !== 'string' || tag.length > MAX_TAG_LENGTH || !TAG_PATTERN.test(tag)) {
      throw new TypeError(
        `tags must be words without blanks or commas, at most ${MAX_TAG_LENGTH} characters, got ${
          typeof tag === 'string' ? `'${tag.slice(0, 40)}'` : typeof tag
        }`,
      );
    }
  }
  const tags = [...new Set(all as string[])].sort();
  return { tags, key: tags.join(',') };
}

/**
 * The tags of the `x-switchboard-tags` header (`eu,gdpr`) as a list, or `undefined` when the
 * header is absent or blank.
 *
 * @example
 * ```ts
 * headerTags(' eu, gdpr '); // ['eu', 'gdpr']
 * ```
 */
export function headerTags(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const tags = value
    .split(',')
    .map((t) => t.trim())
    .filter((t) => t !== '');
  return tags.length === 0 ? undefined : tags;
}

/**
 * Whether `deployment` (or anything else that carries tags) carries every tag of `required`
 * (always, for none). It reads the tags alone, so the registry can filter its pools with it.
 *
 * @example
 * ```ts
 * carries(euWest, tagSet(['eu'])); // true
 * ```
 */
export function carries(
  deployment: { readonly tags: readonly string[] },
  required: TagSet | undefined,
): boolean {
  if (required === undefined) return true;
  const own = deployment.tags;
  for (const tag of required.tags) if (!own.includes(tag)) return false;
  return true;
}
