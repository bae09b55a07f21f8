// A fetch for the SDK clients that refuses every URL not on loopback, so
// that the e2e scripts cannot send a byte off the machine whatever an SDK
// decides to fetch (Node's own fetch ignores HTTP(S)_PROXY).
const loopback = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function loopbackFetch(input, init) {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!loopback.has(url.hostname)) {
    return Promise.reject(new Error(`e2e: refusing to fetch ${url.origin}: not a loopback address`));
  }
  return fetch(input, init);
}
