// What a person sees on signing in to an account they deleted: that it was deleted and when,
// what was kept and why, and nothing to spend or buy with. The API refuses a closed account
// every upload, edit and purchase anyway; this page keeps the person from trying.
import type { Account } from './api/client';

export function ClosedAccount(props: { account: Account; user: string; onSignOut: () => void }) {
  const { account } = props;
  const when = new Date(account.deleted_at ?? account.closed_at ?? account.created_at).toLocaleString();
  const finishing = !account.deleted_at;
  return (
    <main className="signin" data-testid="closed-account">
      <h1>Atelier</h1>
      <h2>This account was deleted</h2>
      <p data-testid="closed-when">
        {finishing
          ? `Closed on ${when}. Its photos and images are being deleted as its last edits finish.`
          : `Deleted on ${when}. Every photo and image in it is gone.`}
      </p>
      <p>
        What was kept, and why: the ledger of credits bought, spent and refunded (dates, amounts and
        references; no photos and none of your words), as the financial record a business must keep.
        Credits left on a deleted account cannot be spent; for a refund of purchased credits, write to support.
      </p>
      <p>You are signed in as {props.user}. To use Atelier again, sign in with another address.</p>
      <button type="button" onClick={props.onSignOut}>Sign out</button>
    </main>
  );
}
