// Package guard keeps web pages out of bbengine's HTTP endpoints.
//
// Everything bbengine serves listens on loopback, but a browser on the
// same machine can still reach loopback: a page may send a "simple"
// cross-site request (a form or a text/plain POST, no preflight), or
// rebind its own host name to 127.0.0.1 (DNS rebinding) and then read
// the answers as same-origin. Two checks stop both:
//
//   - Host: a control surface (the proxy's /_bb/ endpoints, its query
//     endpoint, the harness API) answers only requests whose Host is
//     localhost, a loopback address such as 127.0.0.1 or [::1], with any
//     port; any other name is refused with 421. A rebound page's
//     requests carry its own host name.
//   - Origin: a request with an Origin header is refused with 403 unless
//     the Origin is on the allow list (--allow-origin), and so is one
//     with Sec-Fetch-Site: cross-site and no allowed Origin. Browsers
//     send Origin on every cross-origin request and every POST; agents,
//     SDKs outside a browser, curl and the bbengine CLI send neither.
//
// Reads and writes are separate matters: state-changing endpoints also
// need a bearer token, which a page cannot learn.
//
// A *Policy is immutable and safe for concurrent use; a nil *Policy
// allows no origin.
//
// It imports nothing of bbengine's, like every internal package.
package guard
