// Stripe's official Node library against the stand-in and our webhook (tests/tests/purchases.rs).
// Usage: node client.cjs STAND_IN_BASE_URL WEBHOOK_SECRET PAYMENT_INTENT < event-payload
// Creates a Checkout Session on the stand-in with the library, signs the payload with the
// library's test-signature helper, checks the library's own verifier accepts its header,
// refunds PAYMENT_INTENT twice under one idempotency key, and prints
// {"session": …, "header": "t=…,v1=…", "refunds": [first, retried]}.
'use strict';
const Stripe = require(`${process.env.ATELIER_STRIPE_NODE_MODULES}/stripe`);

const base = new URL(process.argv[2]);
const secret = process.argv[3];
const paymentIntent = process.argv[4];
const stripe = new Stripe('sk_test_official_client', {
  host: base.hostname,
  port: Number(base.port),
  protocol: base.protocol.replace(':', ''),
  apiVersion: '2024-06-20',
  maxNetworkRetries: 0,
});

let payload = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => (payload += d));
process.stdin.on('end', async () => {
  try {
    const session = await stripe.checkout.sessions.create(
      {
        mode: 'payment',
        client_reference_id: 'official-client',
        success_url: 'http://localhost:8787/?checkout=success',
        cancel_url: 'http://localhost:8787/?checkout=cancel',
        line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 500, product_data: { name: 'starter' } } }],
        metadata: { user_id: 'official-client', pack: 'starter', credits: '50' },
      },
      { idempotencyKey: `official-${Date.now()}` },
    );
    const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
    stripe.webhooks.constructEvent(payload, header, secret);
    const key = `official-refund-${paymentIntent}`;
    const refund = () => stripe.refunds.create({ payment_intent: paymentIntent }, { idempotencyKey: key });
    const refunds = [await refund(), await refund()];
    process.stdout.write(JSON.stringify({ session, header, refunds }));
  } catch (e) {
    process.stderr.write(`${e.stack || e}\n`);
    process.exit(1);
  }
});
