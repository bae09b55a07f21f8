// Package webui is the web UI of a data directory: its sessions, each
// session's timeline of canonical events, the raw WAL frames of each
// recorded exchange, memory (artifacts with their evidence), the memory
// search, the context pack preview, the usage (tokens, cost, circuit
// breaker trips) and the health of recording and derivation, as HTML
// pages under /_bb/ui/.
//
// It is an adapter over api.Service and api.ExchangeFrames and
// api.ReadTrace, like the CLI: every answer comes from the service; the
// package only selects a page of it and renders it. The health page
// draws the Health its Options.Health gives (the proxy's own figures, or
// a snapshot's), with the latency histograms as SVG drawn here. Pages are
// html/template with go:embed and read without JavaScript; one
// hand-written script (static/ui.js) adds live updates over server-sent
// events and keyboard navigation.
//
// Routes, all under Prefix:
//
//	/                 sessions: filters agent, project, from, to, q; page
//	/live             server-sent events: "change" when the engine moved
//	/s/<session>      one session's timeline, a window of its events (page, at)
//	/x/<exchange>     the exchange's WAL frames, decoded as bbengine trace
//	/m/               memory of a session or a project: session, project
//	/a/<artifact>     one artifact: chain, neighbours, evidence linked to events and frames
//	/search           Service.Find as bbengine mem search asks it: q, session, task, project, type, k
//	/pack             the context pack of Service.Context: session, task, budget
//	/health           recording, sizes, derivation, the proxy's added latency, retrieval, retention (Options.Health)
//	/usage            Service.Usage as bbengine usage asks it: period, agent, model, since;
//	                  server-drawn SVG charts, by agent and model, costliest sessions, breaker trips
//	/static/<file>    the stylesheet and the script
//
// Security: the UI shows every transcript, so every request must pass
// these checks, in order, before it reaches a page:
//
//   - Peer: only a loopback peer address, else 403, whatever Host it
//     names (the proxy may listen beyond loopback).
//   - Host: only localhost or a loopback address (internal/guard), else
//     421: a page rebinding its DNS name to 127.0.0.1 is refused.
//   - Origin: a request with an Origin other than the UI's own, or with a
//     Sec-Fetch-Site other than same-origin or none (another site, or
//     another loopback port), is refused with 403.
//   - Ticket: a GET with ?token=<a Ticket of Options.Token>, made within
//     two minutes and never used before, sets an HttpOnly,
//     SameSite=Strict cookie with a random value (a session kept in
//     memory for 12 hours) and redirects to the same URL without the
//     ticket; a request without a live session's cookie is refused with
//     401. The token itself never travels.
//   - State changes: any method but GET and HEAD needs the page's CSRF
//     token (header X-Bb-Csrf or form field csrf) and the UI's own
//     Origin, else 403. The one state change is a POST to
//     /_bb/ui/correct, the memory pages' forget and pin forms
//     (Service.Correct); anything else answers 405.
//
// Every answer carries Content-Security-Policy: default-src 'self' (no
// inline script or style is used), X-Content-Type-Options: nosniff,
// Referrer-Policy: same-origin and frame-ancestors 'none'. User and
// assistant messages are rendered as Markdown and sanitised (markdown.go:
// HTML in them shows as text); every other model and tool text is
// HTML-escaped by html/template and shown as preformatted text.
//
// A *UI is safe for concurrent use. Close ends the live streams (call it
// before shutting down the http.Server that serves it); it does not close
// the service or the WAL, which the caller owns.
package webui
