import { explanationText, type DeploymentExplanation } from '../errors/explanation';
import type { TagSet } from '../placement/tags';
import { durationInWords } from '../runtime/duration-words';
import { SwitchboardError } from '../switchboard.error';
import type { Deployment } from './deployment';
import type { ModelState } from './model-state';

/**
 * How the reason of a cooldown begins when the deployment could not be reached at all (connection
 * refused, reset while connecting, DNS failure): `unreachable (connection refused)`.
 */
export const UNREACHABLE = 'unreachable';

/**
 * Whether a cooldown's reason says the deployment could not be reached.
 *
 * @example
 * ```ts
 * isUnreachable(state.downReason); // true after `connect ECONNREFUSED`
 * ```
 */
export function isUnreachable(reason: string | undefined): boolean {
  return reason !== undefined && reason.startsWith(UNREACHABLE);
}

/** What the probe gate reads of a call: the deployments it tried, and whether one may take it. */
interface ProbeGate {
  readonly exclude: ReadonlySet<Deployment> | undefined;
  admits(state: ModelState, deployment: Deployment): boolean;
}

/** Where a probe call goes: a deployment, and the model asked of it there. */
interface ProbeRoute {
  deployment: Deployment;
  model: string;
}

/** One model on one deployment that refused a connection and has not been reached since. */
interface Suspect {
  /** The probe sent since the last refusal, if any. */
  probed: boolean;
}

/**
 * The deployments that could not be reached (a refused connection, a reset while connecting, a
 * DNS failure) and have not answered since. While every deployment that may take a call is one of
 * them, sending calls one by one only repeats the refusal: {@link route} fails such a call at once
 * with a {@link SwitchboardError} (503) that names each deployment and when the next probe goes
 * out, and lets one call through to a deployment once its cooldown has ended, a probe. A probe
 * that is refused again cools the deployment for another cooldown; one that ends any other way
 * (an answer, an HTTP error, a timeout) lifts the suspicion, and routing is as usual.
 *
 * Each suspect is one model of one deployment (the registry marks a deployment's other models
 * down with it); whether a probe is still on its way is the model's count of calls in flight.
 *
 * @example
 * ```ts
 * const probe = registry.unreachable.route('gpt-4o', undefined, undefined, dispatch);
 * // undefined: route as usual; else the probe's route; throws while every deployment refuses
 * ```
 */
export class UnreachableDeployments {
  private readonly suspects = new Map<ModelState, Suspect>();

  constructor(private readonly poolFor: (model: string, tags?: TagSet) => readonly Deployment[]) {}

  /** How many models of deployments are suspected now (0: routing asks nothing more). */
  get size(): number {
    return this.suspects.size;
  }

  /**
   * A model was marked down, for `reason`: suspected when it says unreachable, else cleared.
   * False when this only repeats what is known: a refusal of a call sent before the first one
   * came back, rather than of a probe.
   */
  markedDown(state: ModelState, reason: string | undefined): boolean {
    if (!isUnreachable(reason)) {
      this.suspects.delete(state);
      return true;
    }
    const known = this.suspects.get(state);
    if (known !== undefined && !known.probed) return false;
    this.suspects.set(state, { probed: false });
    return true;
  }

  /** A model was marked up (by hand, or by an answer): no longer suspected. */
  markedUp(state: ModelState): void {
    this.suspects.delete(state);
  }

  /**
   * For a call to `model` (then `fallbacks`, on deployments carrying `tags`): `undefined` when some
   * deployment that may take it is not suspected (route as usual); a probe's route when every one
   * is and one of them is due a probe; else a {@link SwitchboardError}, at once.
   */
  route(
    model: string,
    fallbacks: readonly string[] | undefined,
    tags: TagSet | undefined,
    gate: ProbeGate,
  ): ProbeRoute | undefined {
    let probe: ProbeRoute | undefined;
    let probeOf: Suspect | undefined;
    let any = false;
    for (const m of fallbacks === undefined ? [model] : [model, ...fallbacks]) {
      for (const d of this.poolFor(m, tags)) {
        const state = d.models.get(m)!;
        const suspect = this.suspects.get(state);
        if (suspect === undefined) return undefined;
        any = true;
        if (state.isCooling()) {
          if (!isUnreachable(state.downReason)) return undefined;
          continue;
        }
        // A probe (or a call sent before the refusal) is on its way: its end decides.
        if (state.inFlight.count > 0) continue;
        if (suspect.probed) {
          // The probe ended without a refusal: the deployment was reached.
          this.suspects.delete(state);
          return undefined;
        }
        if (probe !== undefined || gate.exclude?.has(d) === true) continue;
        // Due a probe but without quota room for this call: the usual routing says when.
        if (!gate.admits(state, d)) return undefined;
        probe = { deployment: d, model: m };
        probeOf = suspect;
      }
    }
    if (!any) return undefined;
    if (probe !== undefined) {
      probeOf!.probed = true;
      return probe;
    }
    throw this.unavailable(model, fallbacks, tags);
  }

  /** The error of a call that every deployment refuses: who, why, and when the next probe is. */
  private unavailable(
    model: string,
    fallbacks: readonly string[] | undefined,
    tags: TagSet | undefined,
  ): SwitchboardError {
    const explanations: DeploymentExplanation[] = [];
    let next = Infinity;
    for (const m of fallbacks === undefined ? [model] : [model, ...fallbacks]) {
      for (const d of this.poolFor(m, tags)) {
        const state = d.models.get(m)!;
        const base = { deployment: d.name, model: m, reason: 'cooling' as const };
        const wait = Math.ceil(state.cooldownRemaining);
        if (wait > 0) {
          next = Math.min(next, wait);
          const detail = `cooling after ${state.downReason ?? UNREACHABLE}`;
          explanations.push({ ...base, retryInMs: wait, detail });
        } else {
          explanations.push({ ...base, detail: 'a probe call is on its way' });
        }
      }
    }
    const when = Number.isFinite(next)
      ? `the next probe call goes out in ${durationInWords(next)}`
      : 'a probe call is on its way';
    return new SwitchboardError(
      `No deployments available for ${model}: every deployment that may take the call refuses ` +
        `connections (${explanationText(explanations)}); ${when}. Calls fail at once until a ` +
        `deployment answers: check that its baseURL is reachable.`,
      { code: 'unavailable', explanations },
    );
  }
}
