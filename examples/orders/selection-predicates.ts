// The orders domain's own predicates for its selection cases (selection-cases.json names this module):
// what toolgate cannot know, such as what an order id looks like.
import type { ArgumentPredicates } from 'toolgate';

const predicates: ArgumentPredicates = {
  orderId: {
    description: 'one order id such as ORD-1001',
    test: (value) => typeof value === 'string' && /^ORD-\d{4}$/.test(value),
  },
};

export default predicates;
