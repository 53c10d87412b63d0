import { inject } from 'vitest';

/** The gRPC address of the run's shared Temporal dev server (started by test/support/global-setup.ts). */
export function temporalAddress(): string {
  return inject('temporalAddress');
}
