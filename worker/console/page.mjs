// The console's one HTML page (GET /console), served by ../console.mjs.
// Static: it carries no data, no inline script and no inline style (the
// Content-Security-Policy refuses both); /console/app.js fills it in with
// DOM calls only. Every element the script or the browser test finds has a
// data-testid.
export const CONSOLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idempotency-ledger console</title>
<link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/style.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<header>
  <h1>idempotency-ledger console</h1>
  <form data-testid="token-form" autocomplete="off">
    <label for="token">Operator token</label>
    <input id="token" data-testid="token-input" type="password" autocomplete="off" spellcheck="false" placeholder="paste an operator token (kept in this page only, gone on reload)">
    <button type="submit" data-testid="token-use">Use token</button>
    <button type="button" data-testid="token-forget">Forget token</button>
  </form>
  <p data-testid="status" class="status" role="status"></p>
</header>
<p data-testid="problem" class="problem" role="alert" hidden></p>
<main data-testid="dashboard" hidden>
  <section class="wide">
    <h2>Last hour</h2>
    <div data-testid="trend"></div>
  </section>
  <section>
    <h2>Stats</h2>
    <dl data-testid="stats"></dl>
  </section>
  <section>
    <h2>Billed rows <small>since the object started</small></h2>
    <dl data-testid="billed"></dl>
    <h2>Quota</h2>
    <div data-testid="quota"></div>
  </section>
  <section class="wide">
    <h2>In flight <small>oldest first</small></h2>
    <div data-testid="in-flight"></div>
  </section>
  <section class="wide">
    <h2>Recent keys <small>newest first</small></h2>
    <div data-testid="recent"></div>
    <nav class="pager" data-testid="recent-pager">
      <button type="button" data-testid="recent-newer" disabled>Newer</button>
      <span data-testid="recent-page"></span>
      <button type="button" data-testid="recent-older" disabled>Older</button>
    </nav>
  </section>
  <section class="wide">
    <h2>Look up a key</h2>
    <form data-testid="lookup-form" autocomplete="off">
      <label for="lookup">Idempotency-Key</label>
      <input id="lookup" data-testid="lookup-input" type="text" spellcheck="false" maxlength="255">
      <button type="submit" data-testid="lookup-submit">Look up</button>
    </form>
    <div data-testid="lookup-result"></div>
  </section>
</main>
<noscript>The console needs JavaScript.</noscript>
</body>
</html>
`;

/** The tab icon (an <link rel=icon> keeps the browser from asking for /favicon.ico, which needs a token). */
export const CONSOLE_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1f4e79"/><path d="M4 8h8M8 4v8" stroke="#fff" stroke-width="2"/></svg>
`;
