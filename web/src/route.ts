// The app's pages have real addresses, so Back, reload and a shared link keep the place:
// `/` a new edit, `/edits/{id}` one edit, `/history`, `/account`. CloudFront (and Vite)
// answer every path with index.html.

export type Route = { page: 'edit'; job: string | null } | { page: 'history' } | { page: 'account' };

export function parseRoute(path: string): Route {
  const edit = /^\/edits\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (edit) return { page: 'edit', job: edit[1] ?? null };
  if (path === '/history') return { page: 'history' };
  if (path === '/account') return { page: 'account' };
  return { page: 'edit', job: null };
}

export function pathOf(r: Route): string {
  if (r.page === 'edit') return r.job ? `/edits/${r.job}` : '/';
  return `/${r.page}`;
}
