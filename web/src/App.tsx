import { useCallback, useEffect, useState } from 'react';
import type { User } from 'oidc-client-ts';
import { ACCOUNT_CHANGED, ApiError, api, explain, setToken, type Account } from './api/client';
import { oidcManager, oidcSession, saveSession, savedSession, sessionOf, stopSilentSignIn, type Session } from './auth';
import { Editor } from './Editor';
import { JobPanel } from './JobPanel';
import { History, Ledger } from './Lists';
import { BuyCredits, CHECKOUT_SESSION, CREDITS_ARRIVED } from './BuyCredits';
import { parseRoute, pathOf, type Route } from './route';
import { YourData } from './Privacy';
import { clearDraft } from './draft';
import { ClosedAccount } from './Closed';

export function App() {
  const [session, setSession] = useState<Session | null>(() => {
    const s = savedSession();
    setToken(s?.token ?? null);
    return s;
  });
  const [account, setAccount] = useState<Account | null>(null);
  const [route, setRoute] = useState<Route>(() => parseRoute(location.pathname));
  const [notice, setNotice] = useState<string | null>(null);
  useEffect(() => {
    const back = () => { setRoute(parseRoute(location.pathname)); };
    window.addEventListener('popstate', back);
    return () => { window.removeEventListener('popstate', back); };
  }, []);
  const go = useCallback((r: Route) => {
    if (pathOf(r) !== location.pathname) history.pushState(null, '', pathOf(r));
    setRoute(r);
    // A notice belongs to the page it was said on.
    setNotice(null);
  }, []);
  const view = route.page;
  const jobId = route.page === 'edit' ? route.job : null;
  const [error, setError] = useState<string | null>(null);
  const [goodbye, setGoodbye] = useState(false);
  // Until the tab knows whether the issuer signs it in silently: no sign-in button yet.
  const [asking, setAsking] = useState(() => savedSession() === null);

  const signIn = useCallback((s: Session | null) => {
    saveSession(s);
    setToken(s?.token ?? null);
    setSession(s);
    setError(null);
  }, []);

  useEffect(() => {
    const mgr = oidcManager();
    if (!session) {
      void oidcSession(mgr).then((s) => {
        if (s) signIn(s);
        if (s !== undefined) setAsking(false);
      }, () => { setAsking(false); });
    }
    // A renewed token (refresh token, before expiry) replaces the one in use.
    const renewed = (u: User) => {
      const s = sessionOf(u);
      if (s) signIn(s);
    };
    mgr.events.addUserLoaded(renewed);
    return () => { mgr.events.removeUserLoaded(renewed); };
  }, [session, signIn]);

  const signOut = useCallback(() => {
    stopSilentSignIn();
    clearDraft();
    // The stored OIDC user goes first, so nothing signs this tab in again from it.
    void oidcManager().removeUser().finally(() => { signIn(null); setAccount(null); });
  }, [signIn]);

  const refresh = useCallback(() => {
    api.account().then((a) => { setAccount(a); setError(null); }, (e: unknown) => {
      if (e instanceof ApiError && e.status === 401) signIn(null);
      else setError(explain(e));
    });
  }, [signIn]);
  // One source for the balance: read again after every paid call and purchase, and whenever
  // the tab comes back (another tab or device may have spent meanwhile).
  useEffect(() => {
    if (!session) return;
    refresh();
    const visible = () => { if (document.visibilityState === 'visible') refresh(); };
    for (const e of [CREDITS_ARRIVED, ACCOUNT_CHANGED, 'focus']) window.addEventListener(e, refresh);
    document.addEventListener('visibilitychange', visible);
    return () => {
      for (const e of [CREDITS_ARRIVED, ACCOUNT_CHANGED, 'focus']) window.removeEventListener(e, refresh);
      document.removeEventListener('visibilitychange', visible);
    };
  }, [session, refresh]);

  const openJob = useCallback((id: string | null) => { go({ page: 'edit', job: id }); }, [go]);
  // The submit itself announces the charge (`ACCOUNT_CHANGED`): opening the job is all.
  const onSubmitted = openJob;
  useCheckoutReturn(session !== null, setNotice);

  if (!session && asking) return <main className="signin"><h1>Atelier</h1><p role="status">Signing in…</p></main>;
  if (!session) return <SignIn note={goodbye ? 'Your account and every image in it are deleted.' : null} />;
  // A deleted account is one page: no balance to spend, nothing to buy, no history of deleted images.
  if (account?.closed_at) return <ClosedAccount account={account} user={session.user} onSignOut={signOut} />;

  return (
    <>
      <header className="top">
        <h1>Atelier</h1>
        <nav aria-label="Main">
          <button type="button" aria-current={view === 'edit' ? 'page' : undefined} onClick={() => go({ page: 'edit', job: null })}>Edit</button>
          <button type="button" aria-current={view === 'history' ? 'page' : undefined} onClick={() => go({ page: 'history' })}>History</button>
          <button type="button" aria-current={view === 'account' ? 'page' : undefined} onClick={() => go({ page: 'account' })}>Account</button>
        </nav>
        <p className="balance" aria-live="polite">
          <span data-testid="balance">{account ? String(account.balance) : '…'}</span> credits
        </p>
        <button type="button" className="link" onClick={signOut}>Sign out {session.user}</button>
      </header>
      <main>
        {error && <p role="alert" className="error">{error}</p>}
        {notice && (
          <p role="status" className="notice">
            <span data-testid="notice">{notice}</span>{' '}
            <button type="button" className="link" onClick={() => setNotice(null)}>Dismiss</button>
          </p>
        )}
        {account && <SignupNote grant={account.signup_grant} />}
        {view === 'edit' && (jobId ? (
          <JobPanel id={jobId} onClose={() => openJob(null)} onChange={refresh} onOpen={openJob} />
        ) : (
          <Editor onSubmitted={onSubmitted} balance={account ? account.balance : null} />
        ))}
        {view === 'history' && <History onOpen={openJob} />}
        {view === 'account' && (
          <>
            <section aria-labelledby="acct">
              <h2 id="acct">Account</h2>
              <p>Balance: {account ? String(account.balance) : '…'} credits. Edits in progress: {account ? String(account.in_flight) : '…'}.</p>
              <BuyCredits onError={setError} />
            </section>
            <Ledger onOpen={openJob} />
            <YourData onChange={refresh} onAccountDeleted={() => { signOut(); setGoodbye(true); }} />
          </>
        )}
      </main>
    </>
  );
}

/** Back from the payment page (`?checkout=success|cancel`): says what happened, waits for the
 *  credits to arrive (the payment provider's webhook may come a moment later), and takes the
 *  parameter out of the address so a reload does not say it again. */
function useCheckoutReturn(signedIn: boolean, say: (m: string | null) => void) {
  useEffect(() => {
    const params = new URLSearchParams(location.search);
    const outcome = params.get('checkout');
    if (!signedIn || !outcome) return;
    history.replaceState(null, '', location.pathname);
    if (outcome !== 'success') {
      say('Payment canceled: nothing was charged.');
      return;
    }
    say('Payment received. Your credits arrive in a moment…');
    const session = sessionStorage.getItem(CHECKOUT_SESSION);
    sessionStorage.removeItem(CHECKOUT_SESSION);
    let stop = false;
    void (async () => {
      for (let i = 0; i < 30 && !stop && session; i += 1) {
        const row = (await api.ledger()).items.find((r) => r.reference === `purchase:${session}`);
        if (row) {
          say(`+${String(row.amount)} credits added. Thank you!`);
          window.dispatchEvent(new Event(CREDITS_ARRIVED));
          return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    })();
    return () => { stop = true; };
  }, [signedIn, say]);
}

/** Why an account has no signup credits, when it has none: a state, not an error. */
function SignupNote(props: { grant: Account['signup_grant'] }) {
  if (props.grant === 'address_used') {
    return <p role="status">This e-mail address already had its free credits on an earlier account.</p>;
  }
  if (props.grant === 'pending') {
    return <p role="status">Confirm your e-mail address to get your free credits.</p>;
  }
  return null;
}

function SignIn(props: { note: string | null }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <main className="signin">
      <h1>Atelier</h1>
      {props.note && <p role="status" data-testid="goodbye">{props.note}</p>}
      <p>Turn part of a photo into embroidery, needle felt, origami and more.</p>
      <button
        type="button"
        onClick={() => {
          oidcManager().signinRedirect({ state: location.pathname }).catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
        }}
      >
        Sign in
      </button>
      {error && <p role="alert" className="error">{error}</p>}
    </main>
  );
}
