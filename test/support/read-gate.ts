import type { OrdersApiClient } from '../../examples/orders/orders-api-client';

/** The switch of a read gate: armed, reads of `orderId` wait; `held` hears the first; `release` opens it. */
export interface ReadGate {
  armed: boolean;
  orderId?: string;
  held?: () => void;
  release?: () => void;
}

/**
 * A gate on the orders client's reads of one order: armed, every read of `orderId` (a retried attempt
 * too) waits until the test releases it; reads of other orders (a call of an earlier test still
 * verifying) pass. `gatedReads` wraps the harness's orders client (its `ordersApi` option).
 */
export function createReadGate(): { gate: ReadGate; gatedReads: (api: OrdersApiClient) => OrdersApiClient } {
  const gate: ReadGate = { armed: false };
  let opened: Promise<void> | undefined;
  const gatedReads = (api: OrdersApiClient): OrdersApiClient => ({
    ...api,
    getOrder: async (request) => {
      if (gate.armed && request.orderId === gate.orderId) {
        opened ??= new Promise<void>((release) => {
          gate.release = () => {
            gate.armed = false;
            opened = undefined;
            release();
          };
        });
        gate.held?.();
        await opened;
      }
      return api.getOrder(request);
    },
  });
  return { gate, gatedReads };
}
