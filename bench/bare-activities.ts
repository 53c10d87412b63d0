import { createOrdersApiClient } from '../examples/orders/orders-api-client';
import type { Order } from '../examples/orders/orders-api-client';

/** The bare baseline's activities: one read of the orders service, nothing else. */
export interface BareActivities {
  readOrder(input: { orderId: string }): Promise<Order>;
}

/** The same HTTP client the orders tools use, with no validation, policy or audit around it. */
export function createBareActivities(input: { ordersUrl: string }): BareActivities {
  const api = createOrdersApiClient({ baseUrl: input.ordersUrl });
  return {
    readOrder: ({ orderId }) => api.getOrder({ orderId }),
  };
}
