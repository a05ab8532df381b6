import type { QuotaSettings } from '../../src/testing/quota';

/** A simulated deployment's quota settings: the faithful rules, no limit but those given. */
export function quotaSettings(settings: Partial<QuotaSettings>): QuotaSettings {
  return {
    quota: 'faithful',
    rpm: 0,
    tpm: 0,
    itpm: 0,
    otpm: 0,
    inferredMaxTokens: 4096,
    chargeMaxTokens: false,
    ...settings,
  };
}
