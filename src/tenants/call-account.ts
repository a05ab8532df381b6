import { reconcile, tokensOf, type Admission, type TokenUsage } from '../quota/admission';
import { isNoRoom, type RateLimitErrorClass } from '../quota/no-room';
import type { Deployment } from '../registry/deployment';
import type { ModelState } from '../registry/model-state';
import type { Price } from '../types';
import { costOf } from './price';
import { keepShape } from '../runtime/kept-shapes';
import type { TenantCharge, TenantLimits } from '../state/tenant-counts';

/**
 * What a {@link CallAccount} asks of the tenants it belongs to: prices, the reservation of an
 * attempt, and the counts.
 */
interface AccountBook {
  /** The price of `model` on `deployment`, if it has one. */
  priceOn(deployment: string, model: string): Price | undefined;
  /** The tokens an attempt of `model` may be billed at most: its prompt and output reserved. */
  reservation(model: string, admission: Admission): TokenUsage;
  /** USD reserved for an attempt that may go to any of `models`: the dearest. */
  reservedUsd(models: readonly string[], admission: Admission): number;
  /** `usd` an answer of `state` cost, for `costTenant` (see {@link CallAccount.costTenant}). */
  spent(state: ModelState, costTenant: string, usd: number): void;
  adjust(account: CallAccount, delta: TenantCharge): void;
  /** Take `usd` more of the account's budget, or the tenant's 429. */
  topUp(account: CallAccount, usd: number, RateLimitError: RateLimitErrorClass): Promise<void>;
}

/**
 * One call's account: its tenant (when a policy applies), what it holds reserved, and what each
 * of its attempts settles. Every attempt that produced an answer settles on its own (a filtered
 * answer and its fallback's are both billed): the tokens as the upstream counts them, the cost at
 * the price of the deployment that answered; an attempt whose usage is unknown is charged its
 * reservation. A budgeted call reserves, before each attempt, the dearest amount that attempt may
 * be billed ({@link cover}); a call that fails gives back what it still holds ({@link end}).
 *
 * @example
 * ```ts
 * const account = tenants.open('acme', 'gpt-4o');
 * const usd = account.settled(deployment, modelState, admission, { input: 900, output: 120 });
 * ```
 */
export class CallAccount {
  /** When its charge was taken (epoch ms of the switchboard's clock); 0: not taken. */
  at = 0;
  /** What the counts hold for it now: its reservation still held and what its attempts settled. */
  taken: TenantCharge = { tokens: 0, requests: 0, usd: 0 };
  /** The part of {@link taken} reserved for an attempt not settled yet: tokens and USD. */
  private heldTokens = 0;
  private heldUsd = 0;
  private settledAny = false;
  private ended = false;

  constructor(
    private readonly book: AccountBook,
    /** The tenant as the counts key it (hashed when long); `undefined` when no policy applies. */
    readonly tenantKey: string | undefined,
    /** The tenant as the cost metric counts it: one named in `options.tenants`, or `other`. */
    readonly costTenant: string,
    readonly limits: TenantLimits,
    /** The tenant ('' for a call that names none). */
    readonly tenant: string,
  ) {}

  /** Whether the call counts against a budget: then each attempt is covered before it is sent. */
  get budgeted(): boolean {
    return this.tenantKey !== undefined && this.limits.usd !== undefined;
  }

  /** @internal Its charge was taken at `at`. */
  took(charge: TenantCharge, at: number): void {
    this.at = at;
    this.taken = { ...charge };
    this.heldTokens = charge.tokens;
    this.heldUsd = charge.usd;
    if (!shapeKept) {
      // Set first: the stand-in takes a charge too.
      shapeKept = true;
      keepShape(accountOfStandIns);
    }
  }

  /** @internal `usd` more was reserved for the next attempt. */
  added(usd: number): void {
    this.heldUsd += usd;
    this.taken.usd += usd;
  }

  /**
   * Before an attempt that may go to any of `models`: resolves once the budget holds the dearest
   * amount that attempt may be billed (at once, `undefined`, when it already does), or rejects
   * with the tenant's 429.
   */
  cover(
    models: readonly string[],
    admission: Admission,
    RateLimitError: RateLimitErrorClass,
  ): Promise<void> | undefined {
    if (!this.budgeted || this.ended || this.at === 0) return undefined;
    const need = this.book.reservedUsd(models, admission);
    if (need <= this.heldUsd + 1e-15) return undefined;
    return this.book.topUp(this, need - this.heldUsd, RateLimitError);
  }

  /**
   * An attempt on `state` of `deployment` produced `usage` (`undefined`: the answer did not say,
   * or said what cannot be; the attempt is charged its reservation). Returns the USD it cost,
   * when the model has a price there.
   */
  settled(
    deployment: Deployment,
    state: ModelState,
    admission: Admission,
    usage: TokenUsage | undefined,
  ): number | undefined {
    if (this.ended) return undefined;
    this.settledAny = true;
    const price = this.book.priceOn(deployment.name, state.name);
    const billed = usage ?? this.book.reservation(state.name, admission);
    const usd = price === undefined ? 0 : costOf(price, billed, deployment.provider);
    if (price !== undefined) this.book.spent(state, this.costTenant, usd);
    if (this.tenantKey !== undefined && this.at !== 0) {
      const used = usage ?? { input: admission.input, output: admission.output };
      const tokens = tokensOf(admission) + tokensOf(reconcile(state.quota.charge, admission, used));
      const delta = { tokens: tokens - this.heldTokens, requests: 0, usd: usd - this.heldUsd };
      this.heldTokens = 0;
      this.heldUsd = 0;
      this.taken.tokens += delta.tokens;
      this.taken.usd += delta.usd;
      this.book.adjust(this, delta);
    }
    return price === undefined ? undefined : usd;
  }

  /** The call ended with `error`: what it still holds goes back. */
  end(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    if (this.tenantKey === undefined || this.at === 0) return;
    // A call the switchboard held back reached no upstream: its request goes back too.
    const requests = isNoRoom(error) && !this.settledAny ? -this.taken.requests : 0;
    const delta = { tokens: -this.heldTokens, requests, usd: -this.heldUsd };
    this.heldTokens = 0;
    this.heldUsd = 0;
    if (delta.tokens !== 0 || delta.requests !== 0 || delta.usd !== 0)
      this.book.adjust(this, delta);
  }
}

/** Whether an account of stand-ins is kept for its class's shape (see `keepShape`). */
let shapeKept = false;

/** An account of no switchboard, after a charge was taken, kept for its class's shape. */
function accountOfStandIns(): CallAccount {
  const account = new CallAccount({} as AccountBook, 'k', 'other', {}, 'k');
  account.took({ tokens: 1, requests: 1, usd: 0.5 }, 1.5);
  return account;
}
