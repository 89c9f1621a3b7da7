import { useEffect, useState } from 'react';
import { api, explain, type Pack } from './api/client';

/** The checkout session being paid, kept across the payment page so the return can find its
 *  ledger row (`purchase:<session>`). */
export const CHECKOUT_SESSION = 'atelier.checkout';
/** Dispatched on `window` when bought credits are on the ledger. */
export const CREDITS_ARRIVED = 'atelier:credits';

/** The packs for sale; buying opens the payment provider's checkout page. */
export function BuyCredits(props: { onError: (m: string) => void; beforeLeaving?: () => Promise<void> }) {
  const { onError } = props;
  const [packs, setPacks] = useState<Pack[]>([]);
  useEffect(() => {
    api.packs().then(setPacks, (e: unknown) => { onError(explain(e)); });
  }, [onError]);
  const buy = async (pack: string) => {
    try {
      const session = await api.checkout(pack, crypto.randomUUID());
      sessionStorage.setItem(CHECKOUT_SESSION, session.id);
      // What the person was doing is kept for their return (the edit form, src/draft.ts).
      await props.beforeLeaving?.();
      location.assign(session.url);
    } catch (e) {
      onError(explain(e));
    }
  };
  return (
    <section aria-labelledby="buy" className="packs">
      <h2 id="buy">Buy credits</h2>
      <ul>
        {packs.map((p) => (
          <li key={p.id}>
            <button type="button" onClick={() => void buy(p.id)}>
              {String(p.credits)} credits for {(p.amount / 100).toFixed(2)} {p.currency.toUpperCase()}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
